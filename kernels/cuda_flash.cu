// SPDX-License-Identifier: BSD-3-Clause
// cuda_flash: a FlashAttention-2 style forward kernel on tensor cores.
//
// One CTA of 4 warps per (query tile of block_m = 64 rows, head, batch); warp w owns query rows
// 16w .. 16w + 15 of the tile and keeps everything about them in registers. For each key/value
// tile of block_n rows (stopping at the causal diagonal):
//   S = Q K^T                          mma.sync m16n8k16: fp16/bf16 in, fp32 accumulators
//   S = S * scale, masked to -inf      (tail columns past seq_len_k, causal mask)
//   m_new = max(m, rowmax S); P = exp(S - m_new); l = l * exp(m - m_new) + rowsum P
//   O = O * exp(m - m_new) + round(P) V    S's accumulator fragment, rounded to the input dtype,
//                                           is the A operand of the P V product (no trip to smem)
// O = round(O / l), 0 for rows that saw no key.
//
// The attention variants (core/attention_problem.h) change where rows are and which keys a row
// sees: packed (varlen) Q/O and K/V start at cu_seqlens, paged K/V rows are found through the block
// table one row at a time as the tile is staged, sliding windows narrow both the key tiles read and
// each row's mask, softcap and ALiBi transform the scaled scores, and the log-sum-exp is stored
// per row. Decode shapes take the split-KV path (flash_tile_traits.h, kv_split_plan): the grid's
// x axis runs over query tiles x splits, each split CTA writes an fp32 partial output and its
// log-sum-exp to a workspace, and combine_splits merges them.
//
// The kernel is cut into cpu_flash's stages, under the same names (plan_query_tile,
// load_query_tile, load_key_value_tile, add_key_tile_to_rows, store_output_tile or
// keep_split_partial, then combine_splits), so that the twins read side by side.
// Tiles come from flash_tile_traits.h, shared with the CPU twin cpu_flash, so both take the same
// tail paths; the twin's planted bugs are planted here at the same places through the same rules
// (flash_plant_rules.h), plus two that only a GPU kernel can have (a missing barrier, a store past
// the end of the output).
//
// Shapes: Q, K, V, O are [batch][seq][head][head_dim] by their strides (any layout, padded rows),
// head_dim contiguous. Elements are raw 16-bit patterns, as everywhere in the harness.
//
// fp8 inputs (core/fp8_inputs.h) are decoded as they are staged in shared memory: each e4m3 or e5m2
// pattern becomes the case's fp16 or bf16 element, exactly (both hold every fp8 value), so the
// tensor cores run as for 16-bit inputs; the descale factors fold into the score's scale and the
// output, as cpu_flash and FlashAttention 3 apply them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/cuda_check.h"
#include "core/problem_features.h"
#include "kernels/cuda_flash_backward.h"
#include "kernels/cuda_fp8_staging.h"
#include "kernels/cuda_launch_limits.h"
#include "kernels/device_coverage.h"
#include "kernels/flash_plant_rules.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = 64;  // 4 warps x 16 rows: one m16 MMA tile per warp
constexpr int kPadding = 8;  // elements after each shared-memory row: spreads rows over banks

// How one input tensor is staged in shared memory: its storage dtype (the case's 16-bit dtype,
// staged as it is, or an fp8 format, decoded) and the case's dtype, which the tensor cores take.
struct StagedInput {
  Dtype stored;
  Dtype element;
  PlantedBug plant;     // a plant that misreads fp8 patterns (flash_plant_rules.h)
  float factor = 1.0f;  // each element's, where the elements carry it (fp8_dequantized_to_output)
};

// Everything the kernel reads. The problem's host helpers are not called on the device; what
// they would compute is precomputed here.
struct FlashParams {
  ProblemShape problem;      // shapes, strides, causal
  AttentionTensors tensors;  // device pointers to element [0, 0, 0, 0] of each tensor
  StagedInput q_input, k_input, v_input;
  std::int64_t group_size;  // heads / kv_heads
  float softmax_scale;      // the problem's scale, rounded to fp32 once
  bool vector_loads;  // every input row starts on a 16-byte boundary: load 8 elements at a time
  PlantedBug plant;
  const std::uint16_t* flaky_element;  // written one ulp off (flaky_last_ulp), or null
  std::uint8_t* coverage;  // kDeviceCoverageCount bytes when recording (device_coverage.h), or null
  KvSplitPlan split;       // of the key tiles; splits == 1: each CTA writes its output itself
  // This launch's first batch and head, from which grid z and y count: they stop at kMaxGridYZ, so
  // more batches or heads run as several launches.
  std::int64_t first_batch, first_head;
  // Split-KV workspace: [batch][head][split][kBlockM] partial outputs of head_dim floats and
  // log-sum-exps.
  float* split_output;
  float* split_log_sum_exp;
};

// Device-side coverage: one byte per point, set (never cleared) by any thread that takes the path.
__device__ std::uint8_t device_coverage[kDeviceCoverageCount];
bool device_coverage_enabled = false;

__device__ inline void mark(std::uint8_t* coverage, DeviceCoveragePoint point, bool taken = true) {
  if (coverage != nullptr && taken) coverage[static_cast<int>(point)] = 1;
}

// ---- element types: the two dtypes the tensor cores take ----
template <typename Element>
struct ElementTraits;

template <>
struct ElementTraits<__half> {
  static constexpr float kMinNormal = 0x1p-14f;
  __device__ static std::uint32_t pack(float low, float high) {
    const __half2 pair = __floats2half2_rn(low, high);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  }
  __device__ static std::uint16_t store(float value) {
    return __half_as_ushort(__float2half_rn(value));
  }
  __device__ static std::uint16_t store_toward_zero(float value) {
    return __half_as_ushort(__float2half_rz(value));
  }
  __device__ static float round(float value) { return __half2float(__float2half_rn(value)); }
  __device__ static void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct ElementTraits<__nv_bfloat16> {
  static constexpr float kMinNormal = 0x1p-126f;
  __device__ static std::uint32_t pack(float low, float high) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  }
  __device__ static std::uint16_t store(float value) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  }
  __device__ static std::uint16_t store_toward_zero(float value) {
    return __bfloat16_as_ushort(__float2bfloat16_rz(value));
  }
  __device__ static float round(float value) {
    return __bfloat162float(__float2bfloat16_rn(value));
  }
  __device__ static void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// ---- fp8 inputs ----

__device__ inline bool holds_fp8(Dtype dtype) {
  return dtype == Dtype::e4m3 || dtype == Dtype::e5m2;
}

// A staged slot as the element the tensor cores take: a 16-bit element as it is; an fp8 pattern
// (the slot's low byte) decoded as cpu_flash's input_table decodes it, the plants' misreadings
// included, then converted to the case's dtype, exactly.
__device__ inline std::uint16_t staged_element(std::uint16_t slot, const StagedInput& input) {
  if (!holds_fp8(input.stored)) return slot;
  const float value = dtype_to_float(fp8_pattern_read_as(slot, input.stored, input.plant),
                                     decoded_as(input.stored, input.plant));
  // fp8_dequantized_to_output: times the factor, then rounded (cpu_flash's dequantize_in_place).
  return float_to_dtype(dequantizes_into_output_dtype(input.plant) ? value * input.factor : value,
                        input.element);
}

// `input` with each element's factor (used only where the elements carry the factors).
__device__ inline StagedInput with_element_factor(StagedInput input, float factor) {
  input.factor = factor;
  return input;
}

// Entry `at` of a (batch, KV head) descale array, or 1 for a tensor without one.
__device__ inline float descale_factor(const float* descale, std::int64_t at) {
  return descale != nullptr ? descale[at] : 1.0f;
}

// The factor the output is multiplied by before its rounding: V's (K's under fp8_k_descale_for_v),
// 1 where the elements carry the factors; read by the tile's plan and by the split-KV combine.
__device__ inline float output_descale_factor(const AttentionTensors& tensors, std::int64_t entry,
                                              PlantedBug plant) {
  if (!output_descaled(plant)) return 1.0f;
  return descale_factor(
      output_descaled_by_key_factor(plant) ? tensors.k_descale : tensors.v_descale, entry);
}

__device__ inline std::uint32_t load_pair(const std::uint16_t* shared) {
  return *reinterpret_cast<const std::uint32_t*>(shared);
}

// scores += Q K^T for one n8 tile of keys, `key_row` this lane's key row in the staged K tile: the
// B operand (K^T, "col") pairs are consecutive head_dim elements of that row.
template <typename Traits, int kDimSteps>
__device__ inline void add_key_tile_scores(float (&scores)[4],
                                           const std::uint32_t (&q_fragment)[kDimSteps][4],
                                           const std::uint16_t* key_row) {
#pragma unroll
  for (int step = 0; step < kDimSteps; ++step) {
    Traits::mma(scores, q_fragment[step], load_pair(key_row + step * 16),
                load_pair(key_row + step * 16 + 8));
  }
}

// Copies `rows` rows of head_dim elements into a shared tile with row stride kHeadDim + kPadding,
// row r from row_address(r), fp8 patterns decoded (staged_element); rows from `valid_rows` on are
// zero (never read from global memory).
template <int kHeadDim, int kRows, typename RowAddress>
__device__ void load_tile(std::uint16_t* tile, RowAddress row_address, int valid_rows,
                          bool vector_loads, const StagedInput& input) {
  constexpr int kStride = kHeadDim + kPadding;
  constexpr int kChunks = kHeadDim / 8;  // 8 elements = 16 bytes
  for (int index = threadIdx.x; index < kRows * kChunks; index += kThreads) {
    const int row = index / kChunks;
    const int column = (index % kChunks) * 8;
    uint4* destination = reinterpret_cast<uint4*>(tile + row * kStride + column);
    if (row >= valid_rows) {
      *destination = make_uint4(0, 0, 0, 0);
      continue;
    }
    const std::uint16_t* source = row_address(row) + column;
    if (vector_loads) {
      *destination = __ldg(reinterpret_cast<const uint4*>(source));
    } else {
      std::uint16_t* elements = tile + row * kStride + column;
      for (int e = 0; e < 8; ++e) elements[e] = __ldg(source + e);
    }
    if (holds_fp8(input.stored)) {
      std::uint16_t* elements = tile + row * kStride + column;
      for (int e = 0; e < 8; ++e) elements[e] = staged_element(elements[e], input);
    }
  }
}

__device__ inline std::int64_t larger(std::int64_t a, std::int64_t b) {
  return a > b ? a : b;
}
__device__ inline std::int64_t smaller(std::int64_t a, std::int64_t b) {
  return a < b ? a : b;
}

// Quad lanes (lane / 4 equal) hold the same two rows of an MMA accumulator.
__device__ inline float quad_max(float value) {
  value = fmaxf(value, __shfl_xor_sync(0xFFFFFFFFu, value, 1));
  return fmaxf(value, __shfl_xor_sync(0xFFFFFFFFu, value, 2));
}
__device__ inline float quad_sum(float value) {
  value += __shfl_xor_sync(0xFFFFFFFFu, value, 1);
  return value + __shfl_xor_sync(0xFFFFFFFFu, value, 2);
}

// ---- the kernel's stages: cpu_flash's, under the same names, in the same order (forced inline:
// the register arrays they take by reference must stay in registers) ----

// One query tile of one (batch, head): where it lies and which key tiles its CTA reads, the CTA
// one split of them on the split-KV path (cpu_flash's QueryTile).
struct QueryTile {
  bool in_sequence = false;  // false: the tile lies past its sequence's end; nothing to do
  std::int64_t batch = 0, head = 0, kv_head = 0;
  std::int64_t seq_q = 0, seq_k = 0;  // this sequence's rows: the problem's, or its own when packed
  std::int64_t first_row = 0;
  int rows = 0;                      // of the tile, inside the sequence
  int split = 0;                     // which split of the key tiles this CTA runs
  std::int64_t diagonal_offset = 0;  // query i's causal diagonal is key i + diagonal_offset
  std::int64_t alibi_offset = 0;     // ALiBi's distance from query i to key j: |i + offset - j|
  float alibi_slope = 0.0f;
  float scale = 0.0f;          // applied to Q K^T: the softmax scale times Q's and K's descale
  float value_descale = 1.0f;  // applied to the output (FlashAttention 3's v_descale)
  // Each element's factor where the elements carry them (fp8_dequantized_to_output); 1 otherwise.
  float query_element_factor = 1.0f, key_element_factor = 1.0f, value_element_factor = 1.0f;
  KeyRange keys;             // the keys the tile's rows can see (causal diagonal, window)
  std::int64_t key_end = 0;  // keys from here on lie past the last tile read: masked
  std::int64_t first_key_tile = 0, key_tiles = 0;  // this CTA's key tiles: [first, key_tiles)
};

// What a lane keeps of its two query rows over the key loop (index 0: row `group` of its warp's
// 16, 1: row `group + 8`): cpu_flash's running maximum, row sum and fp32 output accumulator per
// row, in MMA accumulator layout.
template <int kHeadDim>
struct RowState {
  std::int64_t query_row[2];
  KeyRange visible_keys[2];  // each row's keys, from its window and causal diagonal
  float row_max[2];
  float row_sum[2];  // this lane's share; the quad's lanes are summed at the end
  float accumulator[kHeadDim / 8][4];
};

// Where this thread sits in an MMA tile: its warp, its accumulator row `group` (and group + 8),
// and which column pair `quad_lane` of each n8 tile it holds.
struct LanePlace {
  int warp, group, quad_lane;
  __device__ LanePlace()
      : warp(threadIdx.x / 32), group((threadIdx.x % 32) / 4), quad_lane(threadIdx.x % 4) {}
};

// Plans the CTA's query tile (blockIdx: x query tile x split, y head and z batch from the launch's
// first): its sequence, its rows, its diagonals, and the key range, narrowed by the causal diagonal
// and the window to the tiles its rows can see, then to this split's share of them.
template <int kBlockN>
__device__ __forceinline__ QueryTile plan_query_tile(const FlashParams& params) {
  const ProblemShape& problem = params.problem;
  const AttentionTensors& tensors = params.tensors;
  const PlantedBug plant = params.plant;
  const int splits = params.split.splits;
  QueryTile tile;
  tile.batch = params.first_batch + blockIdx.z;
  tile.head = params.first_head + blockIdx.y;
  tile.split = static_cast<int>(blockIdx.x % splits);
  tile.seq_q =
      sequence_length(problem.varlen_q, problem.seq_len_q, tensors.cu_seqlens_q, tile.batch);
  tile.seq_k =
      sequence_length(problem.varlen_k, problem.seq_len_k, tensors.cu_seqlens_k, tile.batch);
  const std::int64_t query_tile = blockIdx.x / splits;
  if (query_tile >= query_tile_count(tile.seq_q, kBlockM, plant) ||
      !pair_launched(tile.batch, tile.head, problem.heads, plant)) {
    return tile;
  }
  tile.in_sequence = true;
  tile.kv_head =
      kv_head_of_query_head(tile.head, problem.kv_heads, params.group_size, tile.seq_k, plant);
  // fp8 inputs' factors fold into the score's scale and the output, in cpu_flash's order.
  const std::int64_t entry = descale_entry(problem, tile.batch, tile.head, tile.kv_head, plant);
  tile.scale = applied_softmax_scale(params.softmax_scale, problem.head_dim, plant);
  for (int times = 0; times < score_descale_applications(plant); ++times) {
    tile.scale = tile.scale * descale_factor(tensors.q_descale, entry) *
                 descale_factor(tensors.k_descale, entry);
  }
  tile.value_descale = output_descale_factor(tensors, entry, plant);
  if (dequantizes_into_output_dtype(plant)) {
    tile.query_element_factor = descale_factor(tensors.q_descale, entry);
    tile.key_element_factor = descale_factor(tensors.k_descale, entry);
    tile.value_element_factor = descale_factor(tensors.v_descale, entry);
  }
  tile.first_row = query_tile * kBlockM;
  tile.rows =
      rows_launched(tile.first_row, rows_in_tile(tile.first_row, kBlockM, tile.seq_q), plant);
  if (tile.rows == 0) {  // the plant launched none of the tile's rows: nothing is written
    tile.in_sequence = false;
    return tile;
  }
  tile.diagonal_offset = causal_diagonal_offset(tile.seq_q, tile.seq_k, plant);
  tile.alibi_offset = alibi_diagonal_offset(tile.seq_q, tile.seq_k, plant);
  tile.alibi_slope = problem.alibi ? tensors.alibi_slopes[tile.head] : 0.0f;

  tile.keys = tile.rows > 0 ? keys_of_query_tile(tile.first_row, tile.rows, tile.diagonal_offset,
                                                 problem.causal, problem.window_left,
                                                 problem.window_right, tile.seq_k, plant)
                            : KeyRange{};
  const std::int64_t tile_first_key_tile = tile.keys.first / kBlockN;
  const std::int64_t tile_key_tiles =
      tile.keys.empty()
          ? tile_first_key_tile
          : larger(tile_first_key_tile, key_tile_count(tile.keys.end, kBlockN, plant));
  tile.key_end = last_key_tile_end(tile.seq_k, tile_key_tiles, kBlockN, plant);
  const std::int64_t per_split = params.split.key_tiles_per_split;
  tile.first_key_tile = larger(tile_first_key_tile, tile.split * per_split);
  tile.key_tiles =
      larger(tile.first_key_tile, smaller(tile_key_tiles, (tile.split + 1) * per_split));
  return tile;
}

// Element [batch, 0, head, 0] of Q or O: packed from the sequence's first row, or batch-strided.
template <int kHeadDim>
__device__ __forceinline__ std::int64_t query_head_start(const FlashParams& params,
                                                         const QueryTile& tile,
                                                         const TensorStrides& strides) {
  const ProblemShape& problem = params.problem;
  const std::int64_t start =
      problem.varlen_q
          ? packed_sequence_start(params.tensors.cu_seqlens_q, tile.batch, params.plant) *
                strides.seq
          : batch_offset(tile.batch, strides.batch, problem.seq_len_q, problem.heads, kHeadDim,
                         params.plant);
  return start + tile.head * strides.head;
}

// Stages the query tile in shared memory, then this lane's A fragments of it in registers for the
// whole key loop; starts this lane's two rows (running maximum, sum and accumulator, the keys each
// row sees).
template <int kHeadDim>
__device__ __forceinline__ void load_query_tile(const FlashParams& params, const QueryTile& tile,
                                                std::uint16_t* q_tile,
                                                std::uint32_t (&q_fragment)[kHeadDim / 16][4],
                                                RowState<kHeadDim>& rows) {
  constexpr int kStride = kHeadDim + kPadding;
  const ProblemShape& problem = params.problem;
  const std::uint16_t* q_base = params.tensors.q +
                                query_head_start<kHeadDim>(params, tile, problem.q_strides) +
                                tile.first_row * problem.q_strides.seq;
  load_tile<kHeadDim, kBlockM>(
      q_tile, [&](int row) { return q_base + row * problem.q_strides.seq; }, tile.rows,
      params.vector_loads, with_element_factor(params.q_input, tile.query_element_factor));
  __syncthreads();
  const LanePlace lane;
  const std::uint16_t* warp_rows =
      q_tile + (lane.warp * 16 + lane.group) * kStride + 2 * lane.quad_lane;
#pragma unroll
  for (int step = 0; step < kHeadDim / 16; ++step) {
    q_fragment[step][0] = load_pair(warp_rows + step * 16);
    q_fragment[step][1] = load_pair(warp_rows + 8 * kStride + step * 16);
    q_fragment[step][2] = load_pair(warp_rows + step * 16 + 8);
    q_fragment[step][3] = load_pair(warp_rows + 8 * kStride + step * 16 + 8);
  }

  const float initial_max = initial_running_max(params.plant);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rows.query_row[r] = tile.first_row + lane.warp * 16 + lane.group + 8 * r;
    rows.visible_keys[r] = visible_key_range_of_row(
        rows.query_row[r], tile.diagonal_offset, problem.causal, problem.window_left,
        problem.window_right, tile.key_end, params.plant);
    rows.row_max[r] = initial_max;
    rows.row_sum[r] = 0.0f;
  }
#pragma unroll
  for (int tile_index = 0; tile_index < kHeadDim / 8; ++tile_index) {
#pragma unroll
    for (int e = 0; e < 4; ++e) rows.accumulator[tile_index][e] = 0.0f;
  }
}

// Per-CTA coverage facts about the planned tile (device_coverage.h), recorded by its first thread.
__device__ __forceinline__ void mark_query_tile(const FlashParams& params, const QueryTile& tile) {
  std::uint8_t* const coverage = threadIdx.x == 0 ? params.coverage : nullptr;
  const ProblemShape& problem = params.problem;
  mark(coverage, DeviceCoveragePoint::partial_query_tile, tile.rows < kBlockM);
  mark(coverage, DeviceCoveragePoint::single_key_tile, tile.key_tiles - tile.first_key_tile == 1);
  mark(coverage, DeviceCoveragePoint::many_key_tiles, tile.key_tiles - tile.first_key_tile > 8);
  mark(coverage, DeviceCoveragePoint::causal_tiles_skipped,
       problem.causal && tile.keys.end < tile.seq_k);
  mark(coverage, DeviceCoveragePoint::causal_tile_empty, tile.key_tiles == tile.first_key_tile);
  mark(coverage, DeviceCoveragePoint::vector_loads, params.vector_loads);
  mark(coverage, DeviceCoveragePoint::element_loads, !params.vector_loads);
  mark(coverage, DeviceCoveragePoint::shared_kv_head, params.group_size > 1);
}

// Row `key` of K or V: through the block table when paged, packed by cu_seqlens_k, or strided.
template <int kHeadDim>
__device__ __forceinline__ const std::uint16_t* key_value_row(const FlashParams& params,
                                                              const QueryTile& tile,
                                                              const std::uint16_t* tensor,
                                                              const TensorStrides& strides,
                                                              std::int64_t key) {
  const ProblemShape& problem = params.problem;
  if (problem.paged()) {
    const std::int64_t page =
        pool_page(params.tensors.block_table, tile.batch, key / problem.page_size,
                  problem.pages_per_sequence, params.plant);
    return tensor + page * strides.batch + (key % problem.page_size) * strides.seq +
           tile.kv_head * strides.head;
  }
  const std::int64_t start = problem.varlen_k
                                 ? params.tensors.cu_seqlens_k[tile.batch] * strides.seq
                                 : batch_offset(tile.batch, strides.batch, problem.seq_len_k,
                                                problem.kv_heads, kHeadDim, params.plant);
  return tensor + start + key * strides.seq + tile.kv_head * strides.head;
}

// Stages `cols` keys of K or V (`input`: how that tensor is stored) from `first_key` in a shared
// tile, row by row (each row found through key_value_row); rows past `cols` are zero.
template <int kHeadDim, int kBlockN>
__device__ __forceinline__ void load_key_value_tile(
    const FlashParams& params, const QueryTile& tile, std::uint16_t* shared_tile,
    const std::uint16_t* tensor, const TensorStrides& strides, const StagedInput& input,
    std::int64_t first_key, int cols) {
  load_tile<kHeadDim, kBlockN>(
      shared_tile,
      [&](int row) {
        return key_value_row<kHeadDim>(params, tile, tensor, strides, first_key + row);
      },
      cols, params.vector_loads, input);
}

// slow_extra_pass: every K tile (its lighter kin: the tiles extra_score_pass_covers) loaded and
// multiplied once more, the scores thrown away; the empty
// asm statement that takes their sum keeps the compiler from dropping the pass.
template <int kHeadDim, int kBlockN, typename Traits>
__device__ __forceinline__ void make_extra_score_pass(
    const FlashParams& params, const QueryTile& tile,
    const std::uint32_t (&q_fragment)[kHeadDim / 16][4], std::uint16_t* k_tile) {
  constexpr int kStride = kHeadDim + kPadding;
  const LanePlace lane;
  float discarded = 0.0f;
  const std::int64_t pair = tile.batch * params.problem.heads + tile.head;
  for (std::int64_t key_tile = tile.first_key_tile; key_tile < tile.key_tiles; ++key_tile) {
    // The same for every thread of the block: the barriers below are reached by all or none.
    if (!extra_score_pass_covers(params.plant, pair, tile.first_row / kBlockM, key_tile)) continue;
    const std::int64_t first_key = key_tile * kBlockN;
    __syncthreads();
    load_key_value_tile<kHeadDim, kBlockN>(
        params, tile, k_tile, params.tensors.k, params.problem.k_strides,
        with_element_factor(params.k_input, tile.key_element_factor), first_key,
        rows_in_tile(first_key, kBlockN, tile.key_end));
    __syncthreads();
#pragma unroll
    for (int n8 = 0; n8 < kBlockN / 8; ++n8) {
      float scores[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      add_key_tile_scores<Traits>(scores, q_fragment,
                                  k_tile + (n8 * 8 + lane.group) * kStride + 2 * lane.quad_lane);
      discarded += scores[0] + scores[1] + scores[2] + scores[3];
    }
  }
  asm volatile("" : : "f"(discarded));
}

// One step of the online softmax for this lane's two rows over the staged key tile `key_tile`
// (`cols` keys from `first_key`): S = Q K^T; scaled, soft-capped, ALiBi-biased and masked; the new
// running maximum; P = exp(S - m) into the row sum; acc = acc * correction + round(P) V.
template <int kHeadDim, int kBlockN, typename Traits>
__device__ __forceinline__ void add_key_tile_to_rows(
    const FlashParams& params, const QueryTile& tile, std::int64_t key_tile, std::int64_t first_key,
    int cols, const std::uint32_t (&q_fragment)[kHeadDim / 16][4], const std::uint16_t* k_tile,
    const std::uint16_t* v_tile, RowState<kHeadDim>& rows) {
  constexpr int kStride = kHeadDim + kPadding;
  constexpr int kDimTiles = kHeadDim / 8;  // n8 tiles of the output
  constexpr int kKeyTiles = kBlockN / 8;   // n8 tiles of S
  constexpr int kKeySteps = kBlockN / 16;  // k16 steps of P V
  const float kNegativeInfinity = -INFINITY;
  const ProblemShape& problem = params.problem;
  const PlantedBug plant = params.plant;
  const LanePlace lane;
  const float scale = tile.scale;
  const float softcap = static_cast<float>(problem.softcap);

  // S = Q K^T.
  float scores[kKeyTiles][4];
#pragma unroll
  for (int n8 = 0; n8 < kKeyTiles; ++n8) {
#pragma unroll
    for (int e = 0; e < 4; ++e) scores[n8][e] = 0.0f;
    add_key_tile_scores<Traits>(scores[n8], q_fragment,
                                k_tile + (n8 * 8 + lane.group) * kStride + 2 * lane.quad_lane);
  }

  // Scale, soft-cap, bias and mask; element e of an n8 tile is row (e / 2), column
  // 2 * quad_lane + (e % 2).
  float tile_max[2] = {kNegativeInfinity, kNegativeInfinity};
#pragma unroll
  for (int n8 = 0; n8 < kKeyTiles; ++n8) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = n8 * 8 + 2 * lane.quad_lane + (e % 2);
      const std::int64_t key = first_key + col;
      const KeyRange& row_keys = rows.visible_keys[e / 2];
      const bool visible = col < cols && key >= row_keys.first && key < row_keys.end;
      const float raw = scores[n8][e];
      float score = raw * scale;
      if (softcap > 0.0f) {
        score = softcaps_before_scale(plant) ? softcap * tanhf(raw / softcap) * scale
                                             : softcap * tanhf(score / softcap);
      }
      if (problem.alibi) {
        const std::int64_t distance = rows.query_row[e / 2] + tile.alibi_offset - key;
        score -= tile.alibi_slope * static_cast<float>(distance < 0 ? -distance : distance);
      }
      scores[n8][e] = visible ? score : kNegativeInfinity;
      tile_max[e / 2] = fmaxf(tile_max[e / 2], scores[n8][e]);
    }
  }

  float correction[2], safe_max[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float new_max = new_running_max(fmaxf(rows.row_max[r], quad_max(tile_max[r])), plant);
    // A row that has seen only masked keys keeps max -inf; exponentiate against 0 instead so
    // that exp(-inf - -inf) never makes a NaN (FlashAttention's Check_inf).
    safe_max[r] = new_max == kNegativeInfinity ? 0.0f : new_max;
    correction[r] = expf(rows.row_max[r] - safe_max[r]);
    const bool rescaled = rows.row_max[r] != kNegativeInfinity && new_max > rows.row_max[r];
    mark(params.coverage, DeviceCoveragePoint::running_max_grew, rescaled);
    mark(params.coverage, DeviceCoveragePoint::correction_underflow,
         rescaled && correction[r] == 0.0f);
    rows.row_max[r] = new_max;
  }

  // P = exp(S - m): summed unrounded, then rounded to the input dtype for the tensor cores (first
  // to e4m3 under fp8_p_rounded_to_e4m3, as cpu_flash rounds it; the input dtype holds the result).
  const Dtype probability_rounding = probability_dtype(problem, plant);
  float tile_sum[2] = {0.0f, 0.0f};
  std::uint32_t probability[kKeyTiles][2];  // packed pairs: [n8 tile][row half]
#pragma unroll
  for (int n8 = 0; n8 < kKeyTiles; ++n8) {
    float p[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      p[e] = expf(scores[n8][e] - safe_max[e / 2]);
      tile_sum[e / 2] += p[e];
      mark(params.coverage, DeviceCoveragePoint::probability_underflow,
           p[e] == 0.0f && scores[n8][e] != kNegativeInfinity);
      mark(params.coverage, DeviceCoveragePoint::probability_subnormal,
           p[e] != 0.0f && Traits::round(p[e]) < Traits::kMinNormal);
      if (probability_rounding != problem.dtype) {
        p[e] = dtype_to_float(float_to_dtype(p[e], probability_rounding), probability_rounding);
      }
    }
    probability[n8][0] = Traits::pack(p[0], p[1]);
    probability[n8][1] = Traits::pack(p[2], p[3]);
  }
  if (adds_tile_to_row_sum(key_tile, tile.key_tiles, plant)) {
#pragma unroll
    for (int r = 0; r < 2; ++r) rows.row_sum[r] = rows.row_sum[r] * correction[r] + tile_sum[r];
  }
  if (rescales_accumulator(plant)) {
#pragma unroll
    for (int d8 = 0; d8 < kDimTiles; ++d8) {
#pragma unroll
      for (int e = 0; e < 4; ++e) rows.accumulator[d8][e] *= correction[e / 2];
    }
  }

  // O += P V. The accumulator layout of two n8 tiles of S is the A layout of one k16 step;
  // B (V, "col") pairs are two consecutive key rows of one head_dim column.
#pragma unroll
  for (int step = 0; step < kKeySteps; ++step) {
    const std::uint32_t a[4] = {probability[2 * step][0], probability[2 * step][1],
                                probability[2 * step + 1][0], probability[2 * step + 1][1]};
    const std::uint16_t* value_rows =
        v_tile + (step * 16 + 2 * lane.quad_lane) * kStride + lane.group;
#pragma unroll
    for (int d8 = 0; d8 < kDimTiles; ++d8) {
      const std::uint16_t* column = value_rows + d8 * 8;
      const std::uint32_t b0 = column[0] | (static_cast<std::uint32_t>(column[kStride]) << 16);
      const std::uint32_t b1 =
          column[8 * kStride] | (static_cast<std::uint32_t>(column[9 * kStride]) << 16);
      Traits::mma(rows.accumulator[d8], a, b0, b1);
    }
  }
  if (rounds_accumulator_after_key_tile(key_tile, kBlockN, problem.seq_len_k, plant)) {
#pragma unroll
    for (int d8 = 0; d8 < kDimTiles; ++d8) {
#pragma unroll
      for (int e = 0; e < 4; ++e) rows.accumulator[d8][e] = Traits::round(rows.accumulator[d8][e]);
    }
  }
}

// O = acc / l in the input dtype, 0 for rows that saw no key, and the log-sum-exp when the problem
// returns it.
template <int kHeadDim, typename Traits>
__device__ __forceinline__ void store_output_tile(const FlashParams& params, const QueryTile& tile,
                                                  const RowState<kHeadDim>& rows) {
  const ProblemShape& problem = params.problem;
  const PlantedBug plant = params.plant;
  const LanePlace lane;
  // The tile's rows end at seq_q, or where the plant stopped them (rows_launched); one further
  // under write_past_output_end.
  const std::int64_t rows_end = tile.first_row + tile.rows;
  const std::int64_t row_limit =
      plant == PlantedBug::write_past_output_end ? tile.seq_q + 1 : rows_end;
  std::uint16_t* o_base =
      params.tensors.o + query_head_start<kHeadDim>(params, tile, problem.o_strides);
  const bool toward_zero = output_rounds_toward_zero(plant);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float total = quad_sum(rows.row_sum[r]);
    const bool saw_no_key = row_saw_no_key(total);
    const float inverse = 1.0f / total;
    const std::int64_t query_row = rows.query_row[r];
    if (query_row >= row_limit) continue;
    mark(params.coverage, DeviceCoveragePoint::fully_masked_row, saw_no_key);
    if (problem.return_lse && lane.quad_lane == 0 && query_row < rows_end) {
      params.tensors.lse[log_sum_exp_index(problem, params.tensors.cu_seqlens_q, tile.batch,
                                           tile.head, query_row, plant)] =
          stored_log_sum_exp(rows.row_max[r], total, plant);
    }
    std::uint16_t* o_row = o_base + query_row * problem.o_strides.seq + 2 * lane.quad_lane;
#pragma unroll
    for (int d8 = 0; d8 < kHeadDim / 8; ++d8) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float value =
            output_value(rows.accumulator[d8][2 * r + half] * inverse, saw_no_key, plant) *
            tile.value_descale;
        mark(params.coverage, DeviceCoveragePoint::output_nonfinite, !isfinite(value));
        std::uint16_t* element = o_row + d8 * 8 + half;
        *element = toward_zero ? Traits::store_toward_zero(value) : Traits::store(value);
        if (element == params.flaky_element) *element ^= 1u;
      }
    }
  }
}

// This split's partial output, acc / l in fp32 (0 for a row that saw none of its keys), and its
// natural log-sum-exp (-inf for such a row), kept in the workspace for combine_splits.
template <int kHeadDim>
__device__ __forceinline__ void keep_split_partial(const FlashParams& params, const QueryTile& tile,
                                                   const RowState<kHeadDim>& rows) {
  const LanePlace lane;
  const std::int64_t slot =
      ((tile.batch * params.problem.heads + tile.head) * params.split.splits + tile.split) *
      kBlockM;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float total = quad_sum(rows.row_sum[r]);
    const bool saw_no_key = row_saw_no_key(total);
    const float inverse = 1.0f / total;
    const int tile_row = lane.warp * 16 + lane.group + 8 * r;
    if (tile_row >= tile.rows) continue;
    if (lane.quad_lane == 0) {
      params.split_log_sum_exp[slot + tile_row] =
          saw_no_key ? -INFINITY : rows.row_max[r] + logf(total);
    }
    float* partial = params.split_output + (slot + tile_row) * kHeadDim + 2 * lane.quad_lane;
#pragma unroll
    for (int d8 = 0; d8 < kHeadDim / 8; ++d8) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        partial[d8 * 8 + half] =
            output_value(rows.accumulator[d8][2 * r + half] * inverse, saw_no_key, params.plant);
      }
    }
  }
}

// grid (query tiles x splits, heads, batch), kThreads threads, shared memory from shared_bytes():
// the stages above, as cpu_flash runs them for one query tile.
template <int kHeadDim, int kBlockN, typename Element>
__global__ void __launch_bounds__(kThreads) flash_forward(const FlashParams params) {
  using Traits = ElementTraits<Element>;
  constexpr int kStride = kHeadDim + kPadding;
  extern __shared__ uint4 shared_memory[];
  std::uint16_t* q_tile = reinterpret_cast<std::uint16_t*>(shared_memory);  // [kBlockM][kStride]
  std::uint16_t* k_tile = q_tile + kBlockM * kStride;                       // [kBlockN][kStride]
  std::uint16_t* v_tile = k_tile + kBlockN * kStride;                       // [kBlockN][kStride]
  const ProblemShape& problem = params.problem;

  const QueryTile tile = plan_query_tile<kBlockN>(params);
  if (!tile.in_sequence) return;
  std::uint32_t q_fragment[kHeadDim / 16][4];
  RowState<kHeadDim> rows;
  load_query_tile<kHeadDim>(params, tile, q_tile, q_fragment, rows);
  mark_query_tile(params, tile);
  if (makes_extra_score_pass(params.plant)) {
    make_extra_score_pass<kHeadDim, kBlockN, Traits>(params, tile, q_fragment, k_tile);
  }

  for (std::int64_t key_tile = tile.first_key_tile; key_tile < tile.key_tiles; ++key_tile) {
    const std::int64_t first_key = key_tile * kBlockN;
    const int cols = rows_in_tile(first_key, kBlockN, tile.key_end);
    std::uint8_t* const coverage = threadIdx.x == 0 ? params.coverage : nullptr;
    mark(coverage, DeviceCoveragePoint::partial_key_tile, cols < kBlockN);
    // The diagonal crosses the tile when the tile's last key is hidden from the tile's first row.
    mark(coverage, DeviceCoveragePoint::causal_diagonal_tile,
         problem.causal && first_key + cols - 1 > tile.first_row + tile.diagonal_offset);
    __syncthreads();  // every warp is done with the previous K/V tiles
    load_key_value_tile<kHeadDim, kBlockN>(
        params, tile, k_tile, params.tensors.k, problem.k_strides,
        with_element_factor(params.k_input, tile.key_element_factor), first_key, cols);
    load_key_value_tile<kHeadDim, kBlockN>(
        params, tile, v_tile, params.tensors.v, problem.v_strides,
        with_element_factor(params.v_input, tile.value_element_factor), first_key, cols);
    if (params.plant != PlantedBug::missing_syncthreads) __syncthreads();  // the tiles are in place
    add_key_tile_to_rows<kHeadDim, kBlockN, Traits>(params, tile, key_tile, first_key, cols,
                                                    q_fragment, k_tile, v_tile, rows);
  }

  if (params.split.splits > 1) {
    keep_split_partial<kHeadDim>(params, tile, rows);
  } else {
    store_output_tile<kHeadDim, Traits>(params, tile, rows);
  }
}

// cuda_flash_staged_fp8_elements: pattern threadIdx.x staged as load_tile stages it.
__global__ void stage_every_fp8_pattern(StagedInput input, std::uint16_t* staged) {
  staged[threadIdx.x] = staged_element(static_cast<std::uint16_t>(threadIdx.x), input);
}

// query_scaled_in_place: doubles every element of Q's span in place, once the output is written
// (cpu_flash does the same on the host).
__global__ void double_query_in_place(std::uint16_t* query, std::int64_t count, Dtype dtype) {
  for (std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       index < count; index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    query[index] = float_to_dtype(2.0f * dtype_to_float(query[index], dtype), dtype);
  }
}

// The split-KV combine: grid (rows of the query tile, heads, batch), kThreads threads, one query
// row per CTA. lse = log(sum_s exp(lse_s)), O = sum_s exp(lse_s - lse) O_s in the input dtype; a
// row no split saw a key for gets lse -inf and the sum of the splits' zeros.
template <int kHeadDim, typename Element>
__global__ void __launch_bounds__(kThreads) combine_splits(const FlashParams params) {
  using Traits = ElementTraits<Element>;
  const ProblemShape& problem = params.problem;
  const AttentionTensors& tensors = params.tensors;
  const PlantedBug plant = params.plant;
  const int splits = params.split.splits;
  const std::int64_t row = blockIdx.x;
  const std::int64_t head = params.first_head + blockIdx.y;
  const std::int64_t batch = params.first_batch + blockIdx.z;
  if (!pair_launched(batch, head, problem.heads, plant)) return;
  const std::int64_t seq_q =
      sequence_length(problem.varlen_q, problem.seq_len_q, tensors.cu_seqlens_q, batch);
  const std::int64_t row_limit = plant == PlantedBug::write_past_output_end ? seq_q + 1 : seq_q;
  // Rows of a query tile that was never run (partial_last_query_tile_unwritten) stay unwritten.
  if (row >= row_limit || row >= kBlockM || query_tile_count(seq_q, kBlockM, plant) == 0) return;
  const std::int64_t slot = ((batch * problem.heads + head) * splits) * kBlockM + row;
  const float kNegativeInfinity = -INFINITY;
  float largest = kNegativeInfinity;
  int splits_with_keys = 0;
  for (int split = 0; split < splits; ++split) {
    const float lse = params.split_log_sum_exp[slot + split * kBlockM];
    largest = fmaxf(largest, lse);
    if (lse > kNegativeInfinity) ++splits_with_keys;
  }
  float log_sum_exp = kNegativeInfinity;
  if (splits_with_keys > 0) {
    float sum = 0.0f;
    for (int split = 0; split < splits; ++split) {
      sum += expf(params.split_log_sum_exp[slot + split * kBlockM] - largest);
    }
    log_sum_exp = largest + logf(sum);
  }
  if (problem.return_lse && threadIdx.x == 0 && row < seq_q) {
    tensors.lse[log_sum_exp_index(problem, tensors.cu_seqlens_q, batch, head, row, plant)] =
        stored_merged_log_sum_exp(log_sum_exp, plant);
  }
  const bool weighted = weights_splits_by_log_sum_exp(plant);
  const bool toward_zero = output_rounds_toward_zero(plant);
  // V's descale factor, as the query tile's plan reads it (plan_query_tile).
  const std::int64_t seq_k =
      sequence_length(problem.varlen_k, problem.seq_len_k, tensors.cu_seqlens_k, batch);
  const std::int64_t kv_head =
      kv_head_of_query_head(head, problem.kv_heads, params.group_size, seq_k, plant);
  const float value_descale =
      output_descale_factor(tensors, descale_entry(problem, batch, head, kv_head, plant), plant);
  const std::int64_t query_start =
      problem.varlen_q
          ? packed_sequence_start(tensors.cu_seqlens_q, batch, plant) * problem.o_strides.seq
          : batch_offset(batch, problem.o_strides.batch, problem.seq_len_q, problem.heads, kHeadDim,
                         plant);
  std::uint16_t* o_row =
      tensors.o + query_start + head * problem.o_strides.head + row * problem.o_strides.seq;
  for (int d = threadIdx.x; d < kHeadDim; d += kThreads) {
    float merged = 0.0f;
    for (int split = 0; split < splits; ++split) {
      const float lse = params.split_log_sum_exp[slot + split * kBlockM];
      const float weight = splits_with_keys == 0     ? 1.0f
                           : weighted                ? expf(lse - log_sum_exp)
                           : lse > kNegativeInfinity ? 1.0f / static_cast<float>(splits_with_keys)
                                                     : 0.0f;
      merged += weight * params.split_output[(slot + split * kBlockM) * kHeadDim + d];
    }
    merged = merged * value_descale;
    std::uint16_t* element = o_row + d;
    *element = toward_zero ? Traits::store_toward_zero(merged) : Traits::store(merged);
    if (element == params.flaky_element) *element ^= 1u;
  }
}

template <int kHeadDim, int kBlockN>
constexpr int shared_bytes() {
  return (kBlockM + 2 * kBlockN) * (kHeadDim + kPadding) * static_cast<int>(sizeof(std::uint16_t));
}

template <int kHeadDim, typename Element>
void launch(const FlashParams& params, std::int64_t query_tiles, cudaStream_t stream) {
  constexpr int kBlockN = find_tile_config(kHeadDim)->block_n;
  static_assert(kBlockN % 16 == 0, "block_n must be whole k16 steps of P V");
  static_assert(kHeadDim % 16 == 0, "head_dim must be whole k16 steps of Q K^T");
  static_assert(find_tile_config(kHeadDim)->block_m == kBlockM, "one m16 MMA tile per warp");
  constexpr int kSharedBytes = shared_bytes<kHeadDim, kBlockN>();
  auto* kernel = &flash_forward<kHeadDim, kBlockN, Element>;
  // Past 48 KiB a kernel must opt in to the larger shared-memory carve-out.
  ATTNFUZZ_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
  // Heads in grid y, batches in z: past kMaxGridYZ of either, one launch per chunk of them.
  const std::int64_t heads = params.problem.heads;
  const std::int64_t batches = params.problem.batch;
  for (std::int64_t first_batch = 0; first_batch < batches; first_batch += kMaxGridYZ) {
    for (std::int64_t first_head = 0; first_head < heads; first_head += kMaxGridYZ) {
      FlashParams chunk = params;
      chunk.first_batch = first_batch;
      chunk.first_head = first_head;
      const unsigned chunk_heads = static_cast<unsigned>(std::min(heads - first_head, kMaxGridYZ));
      const unsigned chunk_batches =
          static_cast<unsigned>(std::min(batches - first_batch, kMaxGridYZ));
      const dim3 grid(static_cast<unsigned>(query_tiles * params.split.splits), chunk_heads,
                      chunk_batches);
      kernel<<<grid, kThreads, kSharedBytes, stream>>>(chunk);
      ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
      if (params.split.splits > 1) {
        combine_splits<kHeadDim, Element>
            <<<dim3(kBlockM, chunk_heads, chunk_batches), kThreads, 0, stream>>>(chunk);
        ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
      }
    }
  }
}

using Launcher = void (*)(const FlashParams&, std::int64_t, cudaStream_t);

// One row per tile configuration of flash_tile_traits.h: its launchers for each dtype.
struct LaunchEntry {
  int head_dim;
  Launcher fp16;
  Launcher bf16;
};
constexpr LaunchEntry kLaunchers[] = {
    {32, launch<32, __half>, launch<32, __nv_bfloat16>},
    {64, launch<64, __half>, launch<64, __nv_bfloat16>},
    {96, launch<96, __half>, launch<96, __nv_bfloat16>},
    {128, launch<128, __half>, launch<128, __nv_bfloat16>},
    {256, launch<256, __half>, launch<256, __nv_bfloat16>},
};
static_assert(std::size(kLaunchers) == std::size(kFlashTileConfigs),
              "every tile configuration has a launcher");

const LaunchEntry* find_launcher(std::int64_t head_dim) {
  for (const LaunchEntry& entry : kLaunchers) {
    if (entry.head_dim == head_dim) return &entry;
  }
  return nullptr;
}

bool rows_aligned_16_bytes(const void* base, const TensorStrides& strides) {
  return reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && strides.batch % 8 == 0 &&
         strides.seq % 8 == 0 && strides.head % 8 == 0;
}

// Device memory for the split-KV partial results, zeroed (nothing a split leaves unwritten is read
// as garbage), freed on every way out.
struct SplitWorkspace {
  void* pointer = nullptr;
  explicit SplitWorkspace(std::size_t bytes) {
    ATTNFUZZ_CUDA_CHECK(cudaMalloc(&pointer, bytes));
    ATTNFUZZ_CUDA_CHECK(cudaMemset(pointer, 0, bytes));
  }
  ~SplitWorkspace() { cudaFree(pointer); }
  SplitWorkspace(const SplitWorkspace&) = delete;
  SplitWorkspace& operator=(const SplitWorkspace&) = delete;
};

constexpr PlantedBug kCudaFlashPlants[] = {
#define ATTNFUZZ_CUDA_FLASH_PLANT(id, effect, origin) PlantedBug::id,
    ATTNFUZZ_ALGORITHM_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)    //
    ATTNFUZZ_CONTRACT_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)     //
    ATTNFUZZ_RACE_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)         //
    ATTNFUZZ_GPU_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)          //
    ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)  //
    ATTNFUZZ_BACKWARD_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)     //
    ATTNFUZZ_FP8_PLANTED_BUGS(ATTNFUZZ_CUDA_FLASH_PLANT)
#undef ATTNFUZZ_CUDA_FLASH_PLANT
};

class CudaFlashKernel final : public AttentionKernel {
 public:
  std::string_view name() const override { return "cuda_flash"; }
  std::string_view summary() const override {
    return "FlashAttention-2 style CUDA kernel: mma.sync m16n8k16, online softmax in registers";
  }
  std::string capabilities() const override {
    return flash_capabilities() + "; any batch and heads (launched in chunks of " +
           std::to_string(kMaxGridYZ) + ")";
  }
  ExecutionSite site() const override { return ExecutionSite::cuda_device; }
  // One CTA per (query tile, head, batch): its arithmetic depends on the lengths and head dim only.
  bool shape_independent_arithmetic() const override { return true; }
  std::span<const PlantedBug> plants() const override { return kCudaFlashPlants; }

  SupportVerdict supports(const AttentionProblem& problem) const override {
    // Every variant and fp8 inputs, as cpu_flash, its twin.
    if (auto reason = unsupported_feature_reason(name(), problem, kAllProblemFeatures)) {
      return SupportVerdict::no(*reason);
    }
    if (find_launcher(problem.head_dim) == nullptr) {
      return SupportVerdict::no(no_tile_config_reason(name(), problem.head_dim));
    }
    return SupportVerdict::yes();
  }

  SupportVerdict backward_support(const AttentionProblem& problem) const override {
    if (problem.fp8_inputs()) {
      return SupportVerdict::no(
          "cuda_flash's backward has no fp8 inputs (nor has FlashAttention 3's)");
    }
    if (std::optional<std::string> reason = cuda_flash_backward_unsupported(problem)) {
      return SupportVerdict::no(*reason);
    }
    return supports(problem);
  }

  // kernels/cuda_flash_backward.cu: dQ atomic unless the run asks for a deterministic one.
  void backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                const BackwardTensors& gradients, PlantedBug plant) const override {
    cuda_flash_backward(problem, tensors, gradients, plant);
  }

  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    const LaunchEntry& entry = *find_launcher(problem.head_dim);
    FlashParams params{};
    params.problem = addressed_as(problem, plant);  // as the plant addresses the tensors
    params.tensors = tensors;
    params.q_input = {problem.q_dtype(), problem.dtype, plant};
    params.k_input = {problem.k_dtype(), problem.dtype, plant};
    params.v_input = {problem.v_dtype(), problem.dtype, plant};
    params.group_size = problem.group_size();
    params.softmax_scale = static_cast<float>(problem.softmax_scale);
    params.vector_loads = rows_aligned_16_bytes(tensors.q, problem.q_strides) &&
                          rows_aligned_16_bytes(tensors.k, problem.k_strides) &&
                          rows_aligned_16_bytes(tensors.v, problem.v_strides);
    params.plant = plant;
    static std::atomic<std::uint64_t> calls{0};
    if (flips_last_element(calls.fetch_add(1), plant)) {
      params.flaky_element = tensors.o + last_output_element(problem);
    }
    if (device_coverage_enabled) {
      ATTNFUZZ_CUDA_CHECK(
          cudaGetSymbolAddress(reinterpret_cast<void**>(&params.coverage), device_coverage));
    }
    const std::int64_t query_tiles = query_tile_count(problem.seq_len_q, kBlockM, plant);
    if (query_tiles == 0) return;  // the plant left nothing to launch
    params.split =
        kv_split_plan(problem.seq_len_q, problem.seq_len_k, *find_tile_config(problem.head_dim));
    const Launcher launcher = problem.dtype == Dtype::fp16 ? entry.fp16 : entry.bf16;
    if (params.split.splits == 1) {
      launcher(params, query_tiles, nullptr);
      ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
      if (scales_query_in_place(plant)) scale_query_in_place(problem, tensors);
      return;
    }
    // The split-KV workspace, zeroed so that nothing a split leaves unwritten is read as garbage.
    const std::size_t slots = static_cast<std::size_t>(problem.batch * problem.heads) *
                              static_cast<std::size_t>(params.split.splits * kBlockM);
    const std::size_t output_bytes = slots * static_cast<std::size_t>(problem.head_dim) * 4;
    const SplitWorkspace workspace(output_bytes + slots * 4);
    params.split_output = static_cast<float*>(workspace.pointer);
    params.split_log_sum_exp = params.split_output + output_bytes / 4;
    launcher(params, query_tiles, nullptr);
    ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    if (scales_query_in_place(plant)) scale_query_in_place(problem, tensors);
  }

 private:
  // The plant writes through the pointer it was given to read: the caller's Q.
  static void scale_query_in_place(const AttentionProblem& problem,
                                   const AttentionTensors& tensors) {
    double_query_in_place<<<256, kThreads>>>(const_cast<std::uint16_t*>(tensors.q), q_span(problem),
                                             problem.q_dtype());
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
    ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
};

}  // namespace

const AttentionKernel& cuda_flash_kernel() {
  static const CudaFlashKernel kernel;
  return kernel;
}

std::vector<std::uint16_t> cuda_flash_staged_fp8_elements(Dtype stored, Dtype element,
                                                          PlantedBug plant) {
  std::uint16_t* staged = nullptr;
  ATTNFUZZ_CUDA_CHECK(cudaMalloc(&staged, 256 * sizeof(std::uint16_t)));
  stage_every_fp8_pattern<<<1, 256>>>(StagedInput{stored, element, plant}, staged);
  std::vector<std::uint16_t> elements(256);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t copied =
      launched == cudaSuccess
          ? cudaMemcpy(elements.data(), staged, 256 * sizeof(std::uint16_t), cudaMemcpyDeviceToHost)
          : launched;
  cudaFree(staged);
  ATTNFUZZ_CUDA_CHECK(copied);
  return elements;
}

void set_device_coverage(bool enabled) {
  device_coverage_enabled = enabled;
  take_device_coverage();  // recording starts with every point clear
}

std::vector<std::uint8_t> take_device_coverage() {
  if (!device_coverage_enabled) return {};
  std::vector<std::uint8_t> points(kDeviceCoverageCount);
  ATTNFUZZ_CUDA_CHECK(cudaMemcpyFromSymbol(points.data(), device_coverage, points.size()));
  const std::vector<std::uint8_t> cleared(kDeviceCoverageCount, 0);
  ATTNFUZZ_CUDA_CHECK(cudaMemcpyToSymbol(device_coverage, cleared.data(), cleared.size()));
  return points;
}

}  // namespace attnfuzz
