// SPDX-License-Identifier: BSD-3-Clause
// Tile shapes of the FlashAttention-2 forward algorithm, shared by the CPU twin (cpu_flash) and the
// CUDA kernel so that both walk the problem in the same tiles and take the same tail paths.
//
// block_m: query rows per tile (one CTA on the GPU). 64 = 4 warps x 16 rows, the M of one
//          m16n8k16 tensor-core MMA per warp.
// block_n: key/value rows per tile. Chosen so that the Q tile plus one K and one V tile in fp16
//          (2 bytes each), (64 + 2 * block_n) * head_dim * 2 bytes, stay near 48 KiB; cuda_flash
//          pads each shared-memory row by 8 elements against bank conflicts and opts in to the
//          larger dynamic carve-out where that passes 48 KiB (head_dim 128: 51 KiB, 256: 66 KiB).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attnfuzz {

struct FlashTileConfig {
  int head_dim;
  int block_m;
  int block_n;
};

inline constexpr FlashTileConfig kFlashTileConfigs[] = {
    {32, 64, 64},   // 12 KiB
    {64, 64, 64},   // 24 KiB
    {96, 64, 64},   // 36 KiB
    {128, 64, 64},  // 48 KiB unpadded
    {256, 64, 32},  // 64 KiB unpadded: needs the opt-in shared memory carve-out on the GPU
};

// The largest value of one tile extent (&FlashTileConfig::block_m or ::block_n) over every
// configuration.
constexpr int largest_over_configs(int FlashTileConfig::*extent) {
  int largest = 0;
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    if (config.*extent > largest) largest = config.*extent;
  }
  return largest;
}

// The largest tiles of any configuration: what a buffer sized once for every head dim must hold.
inline constexpr int kLargestBlockM = largest_over_configs(&FlashTileConfig::block_m);
inline constexpr int kLargestBlockN = largest_over_configs(&FlashTileConfig::block_n);

constexpr const FlashTileConfig* find_tile_config(std::int64_t head_dim) {
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    if (config.head_dim == head_dim) return &config;
  }
  return nullptr;
}

// The head dims that have a tile configuration, space-separated: "32 64 96 128 256".
inline std::string flash_head_dims() {
  std::string text;
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    if (!text.empty()) text += ' ';
    text += std::to_string(config.head_dim);
  }
  return text;
}

// What a flash kernel built on these tiles runs, in one line for --list-kernels.
inline std::string flash_capabilities() {
  return "fp16, bf16; head_dim " + flash_head_dims() +
         "; any seq_len_q, seq_len_k >= 1; causal; GQA/MQA; any strides";
}

// Why a flash kernel cannot run a head dim, naming those it can: "<kernel> has no tile
// configuration for head_dim 80 (supported: 32 64 96 128 256)".
inline std::string no_tile_config_reason(std::string_view kernel, std::int64_t head_dim) {
  return std::string(kernel) + " has no tile configuration for head_dim " +
         std::to_string(head_dim) + " (supported: " + flash_head_dims() + ')';
}

static_assert(find_tile_config(64)->block_m % 16 == 0, "block_m must be whole m16 MMA tiles");
static_assert(find_tile_config(128)->block_n % 8 == 0, "block_n must be whole n8 MMA tiles");

}  // namespace attnfuzz
