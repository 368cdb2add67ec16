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

inline constexpr int kMaxFlashHeadDim = 256;

constexpr const FlashTileConfig* find_tile_config(std::int64_t head_dim) {
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    if (config.head_dim == head_dim) return &config;
  }
  return nullptr;
}

// What a flash kernel built on these tiles runs, in one line for --list-kernels.
inline std::string flash_capabilities() {
  std::string text = "fp16, bf16; head_dim";
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    text += ' ' + std::to_string(config.head_dim);
  }
  return text + "; any seq_len_q, seq_len_k >= 1; causal; GQA/MQA; any strides";
}

// Why a flash kernel cannot run a head dim, naming those it can: "<kernel> has no tile
// configuration for head_dim 80 (supported: 32 64 96 128 256)".
inline std::string no_tile_config_reason(std::string_view kernel, std::int64_t head_dim) {
  std::string reason = std::string(kernel) + " has no tile configuration for head_dim " +
                       std::to_string(head_dim) + " (supported:";
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    reason += ' ' + std::to_string(config.head_dim);
  }
  return reason + ')';
}

static_assert(find_tile_config(64)->block_m % 16 == 0, "block_m must be whole m16 MMA tiles");
static_assert(find_tile_config(128)->block_n % 8 == 0, "block_n must be whole n8 MMA tiles");

}  // namespace attnfuzz
