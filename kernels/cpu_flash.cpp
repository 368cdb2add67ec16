// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash: a CPU twin of the FlashAttention-2 forward algorithm.
//
// It walks the problem exactly as the CUDA kernel does, one (batch, head, query tile) at a time,
// each sequence on its own (a packed batch's sequences start at cu_seqlens_q/k):
//   for each key/value tile of block_n rows that the tile's rows can see (from the sliding
//   window's left edge of its first row to the causal diagonal or the window's right edge of its
//   last row), staged row by row through the block table when K and V are paged:
//     S = Q_tile K_tile^T                fp32 accumulation of exact products of the inputs' values
//                                        (fp16/bf16, or fp8 patterns undescaled)
//     S = S * scale (times Q's and K's descale factors for fp8 inputs); S = softcap * tanh(S /
//     softcap) when soft-capped; S -= slope_h * |distance
//         from the diagonal| with ALiBi; masked to -inf (tail columns past the sequence's keys,
//         the causal mask and the window)
//     m_new = max(m, rowmax(S)); P = exp(S - m_new); l = l * exp(m - m_new) + rowsum(P)
//     acc = acc * exp(m - m_new) + round_to_dtype(P) V_tile     (P in the input dtype, as the
//                                                                tensor cores take it; fp32 acc)
//   O = round_to_dtype(acc / l * V's descale factor), 0 for rows that saw no key; the log-sum-exp m
//   + log(l) (-inf for a row that saw no key) when the problem returns it.
// Tile sizes come from flash_tile_traits.h, shared with the CUDA kernel, and so does the split-KV
// plan: a decode-shaped problem (one query tile, many keys) runs its key tiles in splits, each
// leaving an fp32 partial output and log-sum-exp that a combine step merges, as the CUDA kernel's
// separate CTAs and combine kernel do.
//
// Planted bugs (kernels/planted_bug.h) are switched by the `plant` argument; cpu_flash carries
// every bug of the algorithm, of the calling contract, of speed and of the backward pass (the
// GPU-only ones have no CPU counterpart), and the host kernels' bugs of memory and time. Each
// changes a line or two of the algorithm, the way the real bug would, through the rules it shares
// with the CUDA kernel (flash_plant_rules.h); the backward's are in cpu_flash_backward.cpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "kernels/cpu_flash_backward.h"
#include "kernels/flash_plant_rules.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

// The table Q, K or V of `dtype` is widened through: the dtype's (or the one decoded_as names), or,
// with fp8_subnormals_as_normals, one that reads each fp8 pattern as fp8_pattern_read_as does.
std::span<const float> input_table(Dtype dtype, PlantedBug plant) {
  const std::span<const float> table = widening_table(decoded_as(dtype, plant));
  if (plant != PlantedBug::fp8_subnormals_as_normals || !is_fp8(dtype)) return table;
  static const std::array<std::vector<float>, std::size(kDtypeTraits)> misread = [] {
    std::array<std::vector<float>, std::size(kDtypeTraits)> built;
    for (const DtypeTraits& traits : kDtypeTraits) {
      if (!is_fp8(traits.dtype)) continue;
      const std::span<const float> widen = widening_table(traits.dtype);
      std::vector<float>& read = built[static_cast<std::size_t>(traits.dtype)];
      read.assign(widen.begin(), widen.end());
      for (std::uint16_t bits = 0; bits < 256; ++bits) {
        read[bits] =
            widen[fp8_pattern_read_as(bits, traits.dtype, PlantedBug::fp8_subnormals_as_normals)];
      }
    }
    return built;
  }();
  return misread[static_cast<std::size_t>(dtype)];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNFUZZ_KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// Stages of a cloned kernel are inlined into each clone, so that their loops are vectorised for
// that clone's instruction set rather than compiled once for the baseline.
#define ATTNFUZZ_KERNEL_STAGE __attribute__((always_inline)) inline
#else
#define ATTNFUZZ_KERNEL_CLONES
#define ATTNFUZZ_KERNEL_STAGE inline
#endif

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

constexpr PlantedBug kCpuFlashPlants[] = {
#define ATTNFUZZ_CPU_FLASH_PLANT(id, effect, origin) PlantedBug::id,
    ATTNFUZZ_ALGORITHM_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)      //
    ATTNFUZZ_CONTRACT_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)       //
    ATTNFUZZ_HOST_CONTRACT_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)  //
    ATTNFUZZ_CONTAINMENT_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)    //
    ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)    //
    ATTNFUZZ_BACKWARD_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)       //
    ATTNFUZZ_FP8_PLANTED_BUGS(ATTNFUZZ_CPU_FLASH_PLANT)
#undef ATTNFUZZ_CPU_FLASH_PLANT
};

// Per-thread working set of one query tile, laid out so the inner loops run over contiguous floats.
// Sized for the largest tiles of any configuration, so one workspace serves every head dim.
struct TileWorkspace {
  std::vector<float> query;        // [block_m][head_dim]
  std::vector<float> key_t;        // [head_dim][block_n], transposed for the score loop
  std::vector<float> value;        // [block_n][head_dim]
  std::vector<float> accumulator;  // [block_m][head_dim]
  std::array<float, kLargestBlockN> scores{};
  std::array<float, kLargestBlockM> row_max{};
  std::array<float, kLargestBlockM> row_sum{};
  // Split-KV: each split's partial output and log-sum-exp, [split][block_m][head_dim],
  // [split][block_m].
  std::vector<float> split_output;
  std::vector<float> split_log_sum_exp;
};

// One forward call: what all of its query tiles share.
struct FlashCall {
  const AttentionProblem& problem;
  const AttentionTensors& tensors;
  PlantedBug plant;
  const FlashTileConfig& tiles;
  // Element bits -> fp32, each tensor by its own dtype (fp8 inputs decoded exactly, undescaled).
  std::span<const float> widen_q, widen_k, widen_v;
  const std::uint16_t* flaky_element;  // written one ulp off (flaky_last_ulp), or null
  KvSplitPlan split;                   // of the key tiles (one split: the single-pass path)
};

// One query tile of one (batch, head): where it lies and which keys it reads.
struct QueryTile {
  // Element [batch, 0, head, 0] of Q and O, and [batch, 0, kv_head, 0] of K and V (not paged).
  const std::uint16_t* q_head;
  const std::uint16_t* k_head;
  const std::uint16_t* v_head;
  std::uint16_t* o_head;
  std::int64_t batch;
  std::int64_t head;
  std::int64_t kv_head;
  std::int64_t first_row;        // of the tile, in the sequence's query rows
  int rows;                      // rows of the tile before the sequence's end
  std::int64_t diagonal_offset;  // causal: row i sees the keys up to i + diagonal_offset
  std::int64_t alibi_offset;     // ALiBi: row i's distance is measured from i + alibi_offset
  std::int64_t first_key_tile;   // the key tiles it reads: [first_key_tile, key_tiles)
  std::int64_t key_tiles;
  std::int64_t key_end;  // keys from here on are masked
  float scale;           // applied to Q K^T: the softmax scale times Q's and K's descale factors
  float value_descale;   // applied to the output (FlashAttention 3's v_descale); 1 without
  // Each element's factor where the elements carry them (fp8_dequantized_to_output); 1 otherwise.
  float query_element_factor, key_element_factor, value_element_factor;
  float alibi_slope;  // 0 without ALiBi
};

// One key tile of a query tile's loop.
struct KeyTile {
  std::int64_t index;
  std::int64_t first_key;
  int keys;  // rows of the tile before key_end; the rest are staged as zeros
};

// Element [batch, 0, head, 0] of a tensor of `seq_len` rows of `heads` heads.
template <typename Element>
Element* head_start(const FlashCall& call, Element* tensor, const TensorStrides& strides,
                    std::int64_t seq_len, std::int64_t heads, std::int64_t batch,
                    std::int64_t head) {
  return tensor +
         batch_offset(batch, strides.batch, seq_len, heads, call.problem.head_dim, call.plant) +
         head * strides.head;
}

// Element [batch, 0, head, 0] of a packed (varlen) tensor: its sequence's first row.
template <typename Element>
Element* packed_head_start(const FlashCall& call, Element* tensor, const TensorStrides& strides,
                           const std::int32_t* cu_seqlens, std::int64_t batch, std::int64_t head) {
  return tensor + packed_sequence_start(cu_seqlens, batch, call.plant) * strides.seq +
         head * strides.head;
}

// Row `key` of K or V for a query tile: through the block table when paged, else from the head's
// start.
inline const std::uint16_t* key_value_row(const FlashCall& call, const QueryTile& tile,
                                          const std::uint16_t* tensor, const std::uint16_t* head,
                                          const TensorStrides& strides, std::int64_t key) {
  const ProblemShape& problem = call.problem;
  if (!problem.paged()) return head + key * strides.seq;
  const std::int64_t page = pool_page(call.tensors.block_table, tile.batch, key / problem.page_size,
                                      problem.pages_per_sequence, call.plant);
  return tensor + page * strides.batch + (key % problem.page_size) * strides.seq +
         tile.kv_head * strides.head;
}

// Lays out query tile `query_tile` of (batch, head): where its heads start in the four tensors,
// its rows, its causal diagonal and the key tiles it reads. Its rows are those of the sequence,
// which is shorter than the problem's longest in a packed batch: rows == 0 means none are left.
QueryTile plan_query_tile(const FlashCall& call, std::int64_t batch, std::int64_t head,
                          std::int64_t query_tile) {
  const AttentionProblem& problem = call.problem;
  const AttentionTensors& tensors = call.tensors;
  const std::int64_t seq_q =
      sequence_length(problem.varlen_q, problem.seq_len_q, tensors.cu_seqlens_q, batch);
  const std::int64_t seq_k =
      sequence_length(problem.varlen_k, problem.seq_len_k, tensors.cu_seqlens_k, batch);
  QueryTile tile{};
  tile.batch = batch;
  tile.head = head;
  tile.kv_head =
      kv_head_of_query_head(head, problem.kv_heads, problem.group_size(), seq_k, call.plant);
  if (problem.varlen_q) {
    tile.q_head =
        packed_head_start(call, tensors.q, problem.q_strides, tensors.cu_seqlens_q, batch, head);
    tile.o_head =
        packed_head_start(call, tensors.o, problem.o_strides, tensors.cu_seqlens_q, batch, head);
  } else {
    tile.q_head = head_start(call, tensors.q, problem.q_strides, problem.seq_len_q, problem.heads,
                             batch, head);
    tile.o_head = head_start(call, tensors.o, problem.o_strides, problem.seq_len_q, problem.heads,
                             batch, head);
  }
  if (problem.paged()) {
    tile.k_head = tile.v_head = nullptr;  // rows are found page by page (key_value_row)
  } else if (problem.varlen_k) {
    tile.k_head = tensors.k + tensors.cu_seqlens_k[batch] * problem.k_strides.seq +
                  tile.kv_head * problem.k_strides.head;
    tile.v_head = tensors.v + tensors.cu_seqlens_k[batch] * problem.v_strides.seq +
                  tile.kv_head * problem.v_strides.head;
  } else {
    tile.k_head = head_start(call, tensors.k, problem.k_strides, problem.seq_len_k,
                             problem.kv_heads, batch, tile.kv_head);
    tile.v_head = head_start(call, tensors.v, problem.v_strides, problem.seq_len_k,
                             problem.kv_heads, batch, tile.kv_head);
  }
  tile.first_row = query_tile * call.tiles.block_m;
  const bool tile_exists = query_tile < query_tile_count(seq_q, call.tiles.block_m, call.plant) &&
                           pair_launched(batch, head, problem.heads, call.plant);
  tile.rows = tile_exists ? rows_launched(tile.first_row,
                                          rows_in_tile(tile.first_row, call.tiles.block_m, seq_q),
                                          call.plant)
                          : 0;
  tile.diagonal_offset = causal_diagonal_offset(seq_q, seq_k, call.plant);
  tile.alibi_offset = alibi_diagonal_offset(seq_q, seq_k, call.plant);
  tile.alibi_slope = problem.alibi ? tensors.alibi_slopes[head] : 0.0f;
  // Key tiles this query tile needs: all of them, or those its rows' masks leave.
  const KeyRange keys =
      tile.rows > 0
          ? keys_of_query_tile(tile.first_row, tile.rows, tile.diagonal_offset, problem.causal,
                               problem.window_left, problem.window_right, seq_k, call.plant)
          : KeyRange{};
  tile.first_key_tile = keys.first / call.tiles.block_n;
  tile.key_tiles =
      keys.empty()
          ? tile.first_key_tile
          : std::max(tile.first_key_tile, key_tile_count(keys.end, call.tiles.block_n, call.plant));
  tile.key_end = last_key_tile_end(seq_k, tile.key_tiles, call.tiles.block_n, call.plant);
  // fp8 inputs' factors fold into the score's scale and the output, as FlashAttention 3 applies
  // them: two more fp32 roundings of the scale, one of each output (docs/tolerance.md).
  const std::int64_t entry = descale_entry(problem, batch, head, tile.kv_head, call.plant);
  const auto factor = [](const float* descale, std::int64_t at) {
    return descale != nullptr ? descale[at] : 1.0f;
  };
  tile.scale = applied_softmax_scale(static_cast<float>(problem.softmax_scale), problem.head_dim,
                                     call.plant);
  for (int times = 0; times < score_descale_applications(call.plant); ++times) {
    tile.scale = tile.scale * factor(tensors.q_descale, entry) * factor(tensors.k_descale, entry);
  }
  tile.value_descale = output_descaled(call.plant)
                           ? factor(output_descaled_by_key_factor(call.plant) ? tensors.k_descale
                                                                              : tensors.v_descale,
                                    entry)
                           : 1.0f;
  const bool elements_scaled = dequantizes_into_output_dtype(call.plant);
  tile.query_element_factor = elements_scaled ? factor(tensors.q_descale, entry) : 1.0f;
  tile.key_element_factor = elements_scaled ? factor(tensors.k_descale, entry) : 1.0f;
  tile.value_element_factor = elements_scaled ? factor(tensors.v_descale, entry) : 1.0f;
  return tile;
}

// fp8_dequantized_to_output: each staged value times its factor, rounded to the output dtype (a
// 16-bit input's factor is 1, and the rounding leaves it as it is; zeros stay zero).
ATTNFUZZ_KERNEL_STAGE void dequantize_in_place(float* values, std::int64_t count, float factor,
                                               Dtype dtype) {
  for (std::int64_t index = 0; index < count; ++index) values[index] *= factor;
  round_to_dtype_in_place(values, count, dtype);
}

// Sizes the workspace for the tile, starts its rows' accumulators and running statistics, and
// widens its Q rows to fp32.
ATTNFUZZ_KERNEL_STAGE void load_query_tile(const FlashCall& call, const QueryTile& tile,
                                           TileWorkspace& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const int block_m = call.tiles.block_m;
  const int block_n = call.tiles.block_n;
  // Rows past the tile's are never read, and load_key_value_tile writes all of the K and V tiles
  // it stages, so of the workspace only the tile's accumulator rows start from zero.
  work.query.resize(static_cast<std::size_t>(block_m * dim));
  work.key_t.resize(static_cast<std::size_t>(dim * block_n));
  work.value.resize(static_cast<std::size_t>(block_n * dim));
  work.accumulator.resize(static_cast<std::size_t>(block_m * dim));
  std::fill_n(work.accumulator.begin(), tile.rows * dim, 0.0f);
  std::fill_n(work.row_max.begin(), tile.rows, initial_running_max(call.plant));
  std::fill_n(work.row_sum.begin(), tile.rows, 0.0f);

  for (int row = 0; row < tile.rows; ++row) {
    const std::uint16_t* q_row = tile.q_head + (tile.first_row + row) * problem.q_strides.seq;
    for (std::int64_t d = 0; d < dim; ++d) work.query[row * dim + d] = call.widen_q[q_row[d]];
  }
  if (dequantizes_into_output_dtype(call.plant)) {
    dequantize_in_place(&work.query[0], tile.rows * dim, tile.query_element_factor, problem.dtype);
  }
}

// Stages the K tile (transposed) and the V tile in fp32, zero past the tile's keys.
ATTNFUZZ_KERNEL_STAGE void load_key_value_tile(const FlashCall& call, const QueryTile& tile,
                                               const KeyTile& key_tile, TileWorkspace& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const int block_n = call.tiles.block_n;
  // Never negative in a tile that plan_query_tile lays out; the guard keeps the fills below in
  // bounds whatever a plant does to the key range.
  const int keys = std::max(key_tile.keys, 0);
  for (int col = 0; col < keys; ++col) {
    const std::int64_t key = key_tile.first_key + col;
    const std::uint16_t* k_row =
        key_value_row(call, tile, call.tensors.k, tile.k_head, problem.k_strides, key);
    const std::uint16_t* v_row =
        key_value_row(call, tile, call.tensors.v, tile.v_head, problem.v_strides, key);
    for (std::int64_t d = 0; d < dim; ++d) {
      work.key_t[d * block_n + col] = call.widen_k[k_row[d]];
      work.value[col * dim + d] = call.widen_v[v_row[d]];
    }
  }
  // Columns past the keys: the end of each row of K^T (contiguous, unlike a column of it) and
  // whole rows of V.
  float* const key_t = work.key_t.data();
  for (std::int64_t d = 0; d < dim; ++d) {
    std::fill(key_t + d * block_n + keys, key_t + (d + 1) * block_n, 0.0f);
  }
  std::fill(work.value.data() + keys * dim, work.value.data() + block_n * dim, 0.0f);
  if (dequantizes_into_output_dtype(call.plant)) {
    dequantize_in_place(&work.key_t[0], dim * block_n, tile.key_element_factor, problem.dtype);
    dequantize_in_place(&work.value[0], block_n * dim, tile.value_element_factor, problem.dtype);
  }
}

// S = q K^T for one row of the query tile and the staged key tile, unscaled, into work.scores.
ATTNFUZZ_KERNEL_STAGE void compute_raw_scores(const FlashCall& call, int row, TileWorkspace& work) {
  const std::int64_t dim = call.problem.head_dim;
  const int block_n = call.tiles.block_n;
  float* scores = work.scores.data();
  std::fill_n(scores, block_n, 0.0f);
  const float* q_row = &work.query[row * dim];
  for (std::int64_t d = 0; d < dim; ++d) {
    const float q_value = q_row[d];
    const float* k_column = &work.key_t[d * block_n];
    for (int col = 0; col < block_n; ++col) scores[col] += q_value * k_column[col];
  }
}

// One row's step of the online softmax over one staged key tile: its scores, scaled and masked;
// the new running maximum; P = exp(S - m) into the row sum; and acc = acc * correction + P V.
ATTNFUZZ_KERNEL_STAGE void add_key_tile_to_row(const FlashCall& call, const QueryTile& tile,
                                               const KeyTile& key_tile, int row,
                                               TileWorkspace& work) {
  const AttentionProblem& problem = call.problem;
  const PlantedBug plant = call.plant;
  const std::int64_t dim = problem.head_dim;
  const int block_n = call.tiles.block_n;
  float* scores = work.scores.data();
  compute_raw_scores(call, row, work);

  const std::int64_t query = tile.first_row + row;
  const KeyRange visible_keys =
      visible_key_range_of_row(query, tile.diagonal_offset, problem.causal, problem.window_left,
                               problem.window_right, tile.key_end, plant);
  // The tile's columns the row sees, [first_visible, end_visible); the others become -inf. Each
  // step is a pass of its own over them, so that no column tests what holds for the whole row.
  const std::int64_t keys = std::max(key_tile.keys, 0);
  const std::int64_t first_visible =
      std::clamp<std::int64_t>(visible_keys.first - key_tile.first_key, 0, keys);
  const std::int64_t end_visible =
      std::clamp<std::int64_t>(visible_keys.end - key_tile.first_key, first_visible, keys);
  const float softcap = static_cast<float>(problem.softcap);
  if (!(softcap > 0.0f)) {
    for (std::int64_t col = first_visible; col < end_visible; ++col) scores[col] *= tile.scale;
  } else if (softcaps_before_scale(plant)) {
    for (std::int64_t col = first_visible; col < end_visible; ++col) {
      scores[col] = softcap * std::tanh(scores[col] / softcap) * tile.scale;
    }
  } else {
    for (std::int64_t col = first_visible; col < end_visible; ++col) {
      scores[col] = softcap * std::tanh(scores[col] * tile.scale / softcap);
    }
  }
  if (problem.alibi) {
    const std::int64_t first_distance = query + tile.alibi_offset - key_tile.first_key;
    for (std::int64_t col = first_visible; col < end_visible; ++col) {
      const std::int64_t distance = first_distance - col;
      scores[col] -= tile.alibi_slope * static_cast<float>(distance < 0 ? -distance : distance);
    }
  }
  std::fill(scores, scores + first_visible, kNegativeInfinity);
  std::fill(scores + end_visible, scores + block_n, kNegativeInfinity);
  float tile_max = kNegativeInfinity;
  for (int col = 0; col < block_n; ++col) tile_max = std::max(tile_max, scores[col]);

  const float old_max = work.row_max[row];
  const float new_max = new_running_max(std::max(old_max, tile_max), plant);
  // A row that has seen only masked keys keeps max -inf; exponentiate against 0 instead so
  // that exp(-inf - -inf) never makes a NaN (FlashAttention's Check_inf).
  const float safe_max = new_max == kNegativeInfinity ? 0.0f : new_max;
  const float correction = std::exp(old_max - safe_max);
  work.row_max[row] = new_max;

  float tile_sum = 0.0f;
  for (int col = 0; col < block_n; ++col) {
    scores[col] = std::exp(scores[col] - safe_max);
    tile_sum += scores[col];
  }
  round_to_dtype_in_place(scores, block_n, probability_dtype(problem, plant));
  if (adds_tile_to_row_sum(key_tile.index, tile.key_tiles, plant)) {
    work.row_sum[row] = work.row_sum[row] * correction + tile_sum;
  }

  float* accumulator = &work.accumulator[row * dim];
  if (rescales_accumulator(plant)) {
    for (std::int64_t d = 0; d < dim; ++d) accumulator[d] *= correction;
  }
  for (int col = 0; col < key_tile.keys; ++col) {
    const float probability = scores[col];
    const float* v_row = &work.value[col * dim];
    for (std::int64_t d = 0; d < dim; ++d) accumulator[d] += probability * v_row[d];
  }
  if (rounds_accumulator_after_key_tile(key_tile.index, block_n, problem.seq_len_k, plant)) {
    for (std::int64_t d = 0; d < dim; ++d) {
      accumulator[d] = round_to_dtype(accumulator[d], problem.dtype);
    }
  }
}

// Row `row` of the output from its fp32 values, descaled by V's factor when it has one and
// converted to the output dtype.
ATTNFUZZ_KERNEL_STAGE void store_output_row(const FlashCall& call, const QueryTile& tile, int row,
                                            const float* values) {
  const AttentionProblem& problem = call.problem;
  const bool toward_zero = output_rounds_toward_zero(call.plant);
  std::uint16_t* o_row = tile.o_head + (tile.first_row + row) * problem.o_strides.seq;
  for (std::int64_t d = 0; d < problem.head_dim; ++d) {
    const float value = values[d] * tile.value_descale;
    o_row[d] = toward_zero ? float_to_dtype_toward_zero(value, problem.dtype)
                           : float_to_dtype(value, problem.dtype);
  }
  // std::less_equal orders any two pointers, which <= does not promise for pointers into
  // different arrays (an addressing plant's O row need not lie in the flaky element's).
  const std::less_equal<const std::uint16_t*> at_or_before;
  if (call.flaky_element != nullptr && at_or_before(o_row, call.flaky_element) &&
      !at_or_before(o_row + problem.head_dim, call.flaky_element)) {
    o_row[call.flaky_element - o_row] ^= 1u;
  }
}

// O = acc / l in the input dtype, 0 for rows that saw no key.
ATTNFUZZ_KERNEL_STAGE void store_output_tile(const FlashCall& call, const QueryTile& tile,
                                             TileWorkspace& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  for (int row = 0; row < tile.rows; ++row) {
    const float row_sum = work.row_sum[row];
    const bool saw_no_key = row_saw_no_key(row_sum);
    const float inverse = 1.0f / row_sum;
    if (problem.return_lse) {
      call.tensors.lse[log_sum_exp_index(call.problem, call.tensors.cu_seqlens_q, tile.batch,
                                         tile.head, tile.first_row + row, call.plant)] =
          stored_log_sum_exp(work.row_max[row], row_sum, call.plant);
    }
    float* values = &work.accumulator[row * dim];
    for (std::int64_t d = 0; d < dim; ++d) {
      values[d] = output_value(values[d] * inverse, saw_no_key, call.plant);
    }
    store_output_row(call, tile, row, values);
  }
}

// Split `split`'s partial output, acc / l in fp32 (0 for a row that saw none of its keys), and its
// natural log-sum-exp (-inf for such a row), kept for the combine.
ATTNFUZZ_KERNEL_STAGE void keep_split_partial(const FlashCall& call, const QueryTile& tile,
                                              int split, TileWorkspace& work) {
  const std::int64_t dim = call.problem.head_dim;
  const int block_m = call.tiles.block_m;
  for (int row = 0; row < tile.rows; ++row) {
    const float row_sum = work.row_sum[row];
    const bool saw_no_key = row_saw_no_key(row_sum);
    const float inverse = 1.0f / row_sum;
    work.split_log_sum_exp[split * block_m + row] =
        saw_no_key ? kNegativeInfinity : work.row_max[row] + std::log(row_sum);
    float* partial = &work.split_output[(split * block_m + row) * dim];
    for (std::int64_t d = 0; d < dim; ++d) {
      partial[d] = output_value(work.accumulator[row * dim + d] * inverse, saw_no_key, call.plant);
    }
  }
}

// The combine: lse = log(sum_s exp(lse_s)), O = sum_s exp(lse_s - lse) O_s, stored in the dtype;
// a row that no split saw a key for gets lse -inf and O = 0 (the sum of the splits' zeros).
ATTNFUZZ_KERNEL_STAGE void combine_splits(const FlashCall& call, const QueryTile& tile,
                                          TileWorkspace& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const int block_m = call.tiles.block_m;
  const int splits = call.split.splits;
  const bool weighted = weights_splits_by_log_sum_exp(call.plant);
  float* merged = work.accumulator.data();  // reused: one row of head_dim floats at a time
  for (int row = 0; row < tile.rows; ++row) {
    float largest = kNegativeInfinity;
    int splits_with_keys = 0;
    for (int split = 0; split < splits; ++split) {
      const float lse = work.split_log_sum_exp[split * block_m + row];
      largest = std::max(largest, lse);
      if (lse > kNegativeInfinity) ++splits_with_keys;
    }
    float log_sum_exp = kNegativeInfinity;
    if (splits_with_keys > 0) {
      float sum = 0.0f;
      for (int split = 0; split < splits; ++split) {
        sum += std::exp(work.split_log_sum_exp[split * block_m + row] - largest);
      }
      log_sum_exp = largest + std::log(sum);
    }
    std::fill_n(merged, dim, 0.0f);
    for (int split = 0; split < splits; ++split) {
      const float lse = work.split_log_sum_exp[split * block_m + row];
      // A split without keys weighs 0: exp(-inf) = 0 (or, when no split saw a key, its zeros
      // are summed with weight 1 so that a planted NaN still shows).
      const float weight = splits_with_keys == 0     ? 1.0f
                           : weighted                ? std::exp(lse - log_sum_exp)
                           : lse > kNegativeInfinity ? 1.0f / static_cast<float>(splits_with_keys)
                                                     : 0.0f;
      const float* partial = &work.split_output[(split * block_m + row) * dim];
      for (std::int64_t d = 0; d < dim; ++d) merged[d] += weight * partial[d];
    }
    if (problem.return_lse) {
      call.tensors.lse[log_sum_exp_index(call.problem, call.tensors.cu_seqlens_q, tile.batch,
                                         tile.head, tile.first_row + row, call.plant)] =
          stored_merged_log_sum_exp(log_sum_exp, call.plant);
    }
    store_output_row(call, tile, row, merged);
  }
}

// The online softmax of a query tile over its key tiles [first_key_tile, key_tiles), from a fresh
// workspace.
ATTNFUZZ_KERNEL_STAGE void run_key_tiles(const FlashCall& call, const QueryTile& tile,
                                         TileWorkspace& work) {
  load_query_tile(call, tile, work);
  const auto key_tile_at = [&](std::int64_t index) {
    KeyTile key_tile{};
    key_tile.index = index;
    key_tile.first_key = index * call.tiles.block_n;
    key_tile.keys = rows_in_tile(key_tile.first_key, call.tiles.block_n, tile.key_end);
    return key_tile;
  };
  if (makes_extra_score_pass(call.plant)) {
    // Scores computed and thrown away; the volatile store keeps the compiler from dropping them.
    float discarded = 0.0f;
    const std::int64_t pair = tile.batch * call.problem.heads + tile.head;
    const std::int64_t query_tile = tile.first_row / call.tiles.block_m;
    for (std::int64_t index = tile.first_key_tile; index < tile.key_tiles; ++index) {
      if (!extra_score_pass_covers(call.plant, pair, query_tile, index)) continue;
      load_key_value_tile(call, tile, key_tile_at(index), work);
      for (int row = 0; row < tile.rows; ++row) {
        compute_raw_scores(call, row, work);
        for (int col = 0; col < call.tiles.block_n; ++col) discarded += work.scores[col];
      }
    }
    [[maybe_unused]] volatile float sink = discarded;
  }
  for (std::int64_t index = tile.first_key_tile; index < tile.key_tiles; ++index) {
    const KeyTile key_tile = key_tile_at(index);
    load_key_value_tile(call, tile, key_tile, work);
    for (int row = 0; row < tile.rows; ++row) add_key_tile_to_row(call, tile, key_tile, row, work);
  }
}

// Compiled for AVX-512, AVX2 and baseline x86-64, picked at load time. Products of fp16/bf16
// values are exact in fp32, and the kernels library builds with -ffp-contract=off, so every
// clone computes bit-identical results.
ATTNFUZZ_KERNEL_CLONES
void run_query_tile(const FlashCall& call, const QueryTile& tile, TileWorkspace& work) {
  if (tile.rows <= 0) return;  // past its sequence's end
  if (call.split.splits == 1) {
    run_key_tiles(call, tile, work);
    store_output_tile(call, tile, work);
    return;
  }
  // Split-KV: each split runs the tile's key tiles that fall in its run, as its own CTA would.
  const std::size_t block_m = static_cast<std::size_t>(call.tiles.block_m);
  const std::size_t splits = static_cast<std::size_t>(call.split.splits);
  work.split_output.resize(splits * block_m * static_cast<std::size_t>(call.problem.head_dim));
  work.split_log_sum_exp.resize(splits * block_m);
  for (int split = 0; split < call.split.splits; ++split) {
    QueryTile part = tile;
    part.first_key_tile = std::max(tile.first_key_tile, split * call.split.key_tiles_per_split);
    part.key_tiles =
        std::max(part.first_key_tile,
                 std::min(tile.key_tiles, (split + 1) * call.split.key_tiles_per_split));
    run_key_tiles(call, part, work);
    keep_split_partial(call, part, split, work);
  }
  combine_splits(call, tile, work);
}

class CpuFlashKernel final : public AttentionKernel {
 public:
  std::string_view name() const override { return "cpu_flash"; }
  std::string_view summary() const override {
    return "CPU twin of the FlashAttention-2 forward pass (online softmax, P in the input dtype)";
  }
  std::string capabilities() const override { return flash_capabilities(); }
  ExecutionSite site() const override { return ExecutionSite::host; }
  // Per (batch, head) tiles whose arithmetic only the lengths and head dim shape.
  bool shape_independent_arithmetic() const override { return true; }
  std::span<const PlantedBug> plants() const override { return kCpuFlashPlants; }

  SupportVerdict supports(const AttentionProblem& problem) const override {
    if (find_tile_config(problem.head_dim) == nullptr) {
      return SupportVerdict::no(no_tile_config_reason(name(), problem.head_dim));
    }
    return SupportVerdict::yes();
  }

  SupportVerdict backward_support(const AttentionProblem& problem) const override {
    if (problem.paged()) return SupportVerdict::no("cpu_flash's backward has no paged K/V");
    if (problem.fp8_inputs()) {
      return SupportVerdict::no(
          "cpu_flash's backward has no fp8 inputs (nor has FlashAttention 3's)");
    }
    return supports(problem);
  }

  void backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                const BackwardTensors& gradients, PlantedBug plant) const override {
    cpu_flash_backward(problem, tensors, gradients, plant);
  }

  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    if (hangs_on(problem, plant)) {
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (writes_inputs_before_computing(problem, tensors, plant)) return;  // emptied: nothing to do
    static std::atomic<std::uint64_t> calls{0};
    const bool flaky = flips_last_element(calls.fetch_add(1), plant) && problem.query_rows() > 0;
    const FlashTileConfig& tiles = *find_tile_config(problem.head_dim);
    // The tensors as the plant addresses them (flash_plant_rules.h): their own strides, or not.
    AttentionProblem addressed = problem;
    static_cast<ProblemShape&>(addressed) = addressed_as(problem, plant);
    const FlashCall call{addressed,
                         tensors,
                         plant,
                         tiles,
                         input_table(problem.q_dtype(), plant),
                         input_table(problem.k_dtype(), plant),
                         input_table(problem.v_dtype(), plant),
                         flaky ? tensors.o + last_output_element(problem) : nullptr,
                         kv_split_plan(problem.seq_len_q, problem.seq_len_k, tiles)};
    const std::int64_t query_tiles = query_tile_count(problem.seq_len_q, call.tiles.block_m, plant);
    const std::int64_t items = problem.batch * problem.heads * query_tiles;
    parallel_for(items, [&](std::int64_t item) {
      thread_local TileWorkspace workspace;
      const std::int64_t query_tile = item % query_tiles;
      const std::int64_t head = (item / query_tiles) % problem.heads;
      const std::int64_t batch = item / (query_tiles * problem.heads);
      run_query_tile(call, plan_query_tile(call, batch, head, query_tile), workspace);
    });
    if (scales_query_in_place(plant)) {
      // The plant writes through the pointer it was given to read: the caller's Q.
      std::uint16_t* query = const_cast<std::uint16_t*>(tensors.q);
      for (std::int64_t index = 0; index < q_span(problem); ++index) {
        query[index] = float_to_dtype(2.0f * call.widen_q[query[index]], problem.q_dtype());
      }
    }
    if (writes_key_past_end(plant)) {
      std::uint16_t* key = const_cast<std::uint16_t*>(tensors.k);
      key[k_span(problem) + kKeyWritePastEndElements - 1] = 0;  // in K's guard tail
    }
    if (writes_output_far_past_end(plant) && problem.query_rows() > 0) {
      tensors.o[output_far_past_end_element(problem)] = tensors.o[0];
    }
    if (writes_lse_far_past_end(plant) && tensors.lse != nullptr && problem.query_rows() > 0) {
      tensors.lse[lse_far_past_end_element(problem)] = 0.0f;
    }
    if (leaks_workspace(plant)) {
      // Kept where nothing frees it (and reachable, so no optimiser drops the allocation).
      static std::mutex leaked_mutex;
      static std::vector<std::unique_ptr<unsigned char[]>> leaked;
      const std::lock_guard lock(leaked_mutex);
      leaked.emplace_back(new unsigned char[kLeakedWorkspaceBytes]);
      std::memset(leaked.back().get(), 1, kLeakedWorkspaceBytes);
    }
  }
};

}  // namespace

const AttentionKernel& cpu_flash_kernel() {
  static const CpuFlashKernel kernel;
  return kernel;
}

}  // namespace attnfuzz
