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
         "; any seq_len_q, seq_len_k >= 1; causal; GQA/MQA; any strides; varlen, paged K/V, "
         "sliding windows, softcap, ALiBi, log-sum-exp; split-KV for decode";
}

// Why a flash kernel cannot run a head dim, naming those it can: "<kernel> has no tile
// configuration for head_dim 80 (supported: 32 64 96 128 256)".
inline std::string no_tile_config_reason(std::string_view kernel, std::int64_t head_dim) {
  return std::string(kernel) + " has no tile configuration for head_dim " +
         std::to_string(head_dim) + " (supported: " + flash_head_dims() + ')';
}

// ---- split-KV (the decode path) ----
//
// A decode step (a few query rows against a long cache) gives a GPU only batch x heads tiles of
// work. The split-KV path ("flash decoding") splits each
// tile's key tiles into up to kMaxKvSplits consecutive runs; each split runs the online softmax
// over its keys alone and writes a partial output (fp32, normalised by its own row sum) and its
// log-sum-exp; a combine step then merges them, weighting split s by exp(lse_s - lse), where lse
// is the log-sum-exp over all splits. A split whose keys a row cannot see has lse_s = -inf and
// weight 0.
inline constexpr int kMaxKvSplits = 16;
inline constexpr std::int64_t kKeysPerKvSplit = 256;     // past this many keys, the keys are split
inline constexpr std::int64_t kMaxKvSplitQueryRows = 8;  // decode, speculative decode

struct KvSplitPlan {
  int splits;                        // 1: the single-pass path
  std::int64_t key_tiles_per_split;  // split s reads key tiles [s * this, (s + 1) * this)
};

// How `tiles` split the keys of a problem of seq_len_q query rows (the longest sequence's) and
// seq_len_k keys: one split unless there are at most kMaxKvSplitQueryRows queries and more than
// kKeysPerKvSplit keys; then runs of at least kKeysPerKvSplit keys, at most kMaxKvSplits of them,
// none empty. (A longer query tile fills the GPU's CTAs better unsplit; past one query tile, the
// grid has more tiles anyway.)
constexpr KvSplitPlan kv_split_plan(std::int64_t seq_len_q, std::int64_t seq_len_k,
                                    const FlashTileConfig& tiles) {
  const std::int64_t key_tiles = (seq_len_k + tiles.block_n - 1) / tiles.block_n;
  if (seq_len_q > kMaxKvSplitQueryRows || seq_len_k <= kKeysPerKvSplit) return {1, key_tiles};
  const std::int64_t wanted = (seq_len_k + kKeysPerKvSplit - 1) / kKeysPerKvSplit;
  const std::int64_t splits = wanted < kMaxKvSplits ? wanted : kMaxKvSplits;
  const std::int64_t per_split = (key_tiles + splits - 1) / splits;
  return {static_cast<int>((key_tiles + per_split - 1) / per_split), per_split};
}

static_assert(find_tile_config(64)->block_m % 16 == 0, "block_m must be whole m16 MMA tiles");
static_assert(find_tile_config(128)->block_n % 8 == 0, "block_n must be whole n8 MMA tiles");
static_assert(kv_split_plan(1, 257, *find_tile_config(64)).splits == 2, "257 keys: two splits");
static_assert(kv_split_plan(1, 32768, *find_tile_config(128)).splits == kMaxKvSplits);
static_assert(kv_split_plan(9, 32768, *find_tile_config(128)).splits == 1, "not a decode step");
static_assert(kMaxKvSplitQueryRows <= 64, "a split-KV problem has one query tile");

}  // namespace attnfuzz
