// SPDX-License-Identifier: BSD-3-Clause
// The rules of the FlashAttention-2 forward pass that planted bugs bend, written once for both
// twins: the CPU twin (cpu_flash.cpp) and the CUDA kernel (cuda_flash.cu) call these, so a plant
// cannot drift between them. Each function takes the problem's values and the plant and returns
// the value the kernel uses: the correct one, or the one the plant's real-world slip produces.
//
// Only integer arithmetic and selections live here; every float operation (products, sums,
// maxima, exp) stays in the kernels, whose compilers order and contract them in their own way.
// Plants that only a GPU can have (missing_syncthreads, write_past_output_end) stay in the CUDA
// kernel.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/attention_problem.h"
#include "core/host_device.h"
#include "kernels/cuda_launch_limits.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

// ---- how much work is done ----

// slow_extra_pass: a first pass over the key tiles computing scores that are thrown away, over
// every one; its lighter kin make it over one (query tile, key tile) visit in `period` only, the
// visits picked by a hash of (batch x head, query tile, key tile) so that about that share of
// every case's visits, small or large, has the pass. 0: no extra pass.
ATTNFUZZ_HOST_DEVICE inline int extra_score_pass_period(PlantedBug plant) {
  switch (plant) {
    case PlantedBug::slow_extra_pass:
      return 1;
    case PlantedBug::slow_extra_pass_1_in_2:
      return 2;
    case PlantedBug::slow_extra_pass_1_in_4:
      return 4;
    case PlantedBug::slow_extra_pass_1_in_8:
      return 8;
    case PlantedBug::slow_extra_pass_1_in_12:
      return 12;
    default:
      return 0;
  }
}

ATTNFUZZ_HOST_DEVICE inline bool makes_extra_score_pass(PlantedBug plant) {
  return extra_score_pass_period(plant) > 0;
}

// Whether the extra pass covers key tile `key_tile` of query tile `query_tile` of (batch, head)
// pair `pair` (batch * heads + head).
ATTNFUZZ_HOST_DEVICE inline bool extra_score_pass_covers(PlantedBug plant, std::int64_t pair,
                                                         std::int64_t query_tile,
                                                         std::int64_t key_tile) {
  const int period = extra_score_pass_period(plant);
  if (period <= 1) return period == 1;
  // Multiplicative hashing (odd 64-bit constants), its high half taken: well spread for any
  // small index.
  const std::uint64_t mixed = static_cast<std::uint64_t>(pair) * 0x9E3779B97F4A7C15ull +
                              static_cast<std::uint64_t>(query_tile) * 0xC2B2AE3D27D4EB4Full +
                              static_cast<std::uint64_t>(key_tile) * 0x165667B19E3779F9ull;
  return (mixed >> 32) % static_cast<std::uint64_t>(period) == 0;
}

// ---- where a tile lies in the tensors ----

// The problem as the kernel addresses its tensors: each by its own strides. o_with_q_strides
// addresses O by Q's (a kernel that assumes its output is laid out like its query), and
// v_with_k_strides V by K's (one stride set for the K/V cache): both right whenever the caller's
// tensors share those strides, as they do in most tests.
ATTNFUZZ_HOST_DEVICE inline ProblemShape addressed_as(ProblemShape problem, PlantedBug plant) {
  if (plant == PlantedBug::o_with_q_strides) problem.o_strides = problem.q_strides;
  if (plant == PlantedBug::v_with_k_strides) problem.v_strides = problem.k_strides;
  return problem;
}

// ---- how much of the grid is launched ----

// Whether the (batch, head) pair runs at all. pairs_past_grid_limit_dropped flattens the pairs into
// one grid dimension clamped to CUDA's limit for y and z: from pair kMaxGridYZ on, none runs.
ATTNFUZZ_HOST_DEVICE inline bool pair_launched(std::int64_t batch, std::int64_t head,
                                               std::int64_t heads, PlantedBug plant) {
  return plant != PlantedBug::pairs_past_grid_limit_dropped || batch * heads + head < kMaxGridYZ;
}

// Rows of a query tile from `first_row` that run: `rows`, or with
// query_rows_past_grid_limit_dropped (one block per query row, the rows in a clamped y or z
// dimension) only those before row kMaxGridYZ of the sequence.
ATTNFUZZ_HOST_DEVICE inline int rows_launched(std::int64_t first_row, int rows, PlantedBug plant) {
  if (plant != PlantedBug::query_rows_past_grid_limit_dropped) return rows;
  const std::int64_t before_limit = kMaxGridYZ - first_row;
  return before_limit <= 0 ? 0 : before_limit < rows ? static_cast<int>(before_limit) : rows;
}

// Query tiles of block_m rows over seq_len_q rows: a ceiling division.
// partial_last_query_tile_unwritten floors it, leaving the last partial tile unwritten.
ATTNFUZZ_HOST_DEVICE inline std::int64_t query_tile_count(std::int64_t seq_len_q,
                                                          std::int64_t block_m, PlantedBug plant) {
  return plant == PlantedBug::partial_last_query_tile_unwritten
             ? seq_len_q / block_m
             : (seq_len_q + block_m - 1) / block_m;
}

// The K/V head that query head `head` reads: query heads are grouped, kv head h serving the
// group_size (heads / kv_heads) consecutive query heads from h * group_size on.
// gqa_modulo interleaves them instead; single_key_wrong_kv_head does so only when there is a
// single key (a decode fast path with its own head mapping).
ATTNFUZZ_HOST_DEVICE inline std::int64_t kv_head_of_query_head(std::int64_t head,
                                                               std::int64_t kv_heads,
                                                               std::int64_t group_size,
                                                               std::int64_t seq_len_k,
                                                               PlantedBug plant) {
  const bool interleaved = plant == PlantedBug::gqa_modulo ||
                           (plant == PlantedBug::single_key_wrong_kv_head && seq_len_k == 1);
  return interleaved ? head % kv_heads : head / group_size;
}

// Elements from a tensor's start to the start of batch `batch`: the tensor's batch stride.
// batch_stride_unpadded steps by the compact size of one batch (seq_len x heads x head_dim),
// which is wrong for padded rows and for layouts other than batch-outermost.
ATTNFUZZ_HOST_DEVICE inline std::int64_t batch_offset(std::int64_t batch, std::int64_t batch_stride,
                                                      std::int64_t seq_len, std::int64_t heads,
                                                      std::int64_t head_dim, PlantedBug plant) {
  return batch *
         (plant == PlantedBug::batch_stride_unpadded ? seq_len * heads * head_dim : batch_stride);
}

// Rows of a tile of `block` rows from `first_row` that lie before `end`: block, or fewer in a
// partial last tile. Query tiles end at seq_len_q, key tiles at last_key_tile_end(); later rows of
// a tile are never read.
ATTNFUZZ_HOST_DEVICE inline int rows_in_tile(std::int64_t first_row, int block, std::int64_t end) {
  const std::int64_t remaining = end - first_row;
  return static_cast<int>(remaining < block ? remaining : block);
}

// ---- the causal mask and the keys a query tile reads ----

// How far past its own index a query row sees under the causal mask: row i sees key j iff
// j <= i + offset. The mask is aligned bottom-right (offset seq_len_k - seq_len_q, as
// FlashAttention). causal_top_left drops that shift; causal_off_by_one sees one key more.
ATTNFUZZ_HOST_DEVICE inline std::int64_t causal_diagonal_offset(std::int64_t seq_len_q,
                                                                std::int64_t seq_len_k,
                                                                PlantedBug plant) {
  const std::int64_t alignment = plant == PlantedBug::causal_top_left ? 0 : seq_len_k - seq_len_q;
  const std::int64_t slack = plant == PlantedBug::causal_off_by_one ? 1 : 0;
  return alignment + slack;
}

// Keys a query tile of `rows` rows from `first_row` needs: all seq_len_k of them, or (causal) those
// up to the last visible key of its last row, clamped to [0, seq_len_k].
ATTNFUZZ_HOST_DEVICE inline std::int64_t keys_needed_by_query_tile(std::int64_t first_row, int rows,
                                                                   std::int64_t diagonal_offset,
                                                                   bool causal,
                                                                   std::int64_t seq_len_k) {
  if (!causal) return seq_len_k;
  const std::int64_t through_diagonal = first_row + rows - 1 + diagonal_offset + 1;
  if (through_diagonal < 0) return 0;
  return through_diagonal < seq_len_k ? through_diagonal : seq_len_k;
}

// Key tiles of block_n rows that cover keys_needed keys: a ceiling division.
// drop_last_key_tile floors it, skipping the last, partial key tile.
ATTNFUZZ_HOST_DEVICE inline std::int64_t key_tile_count(std::int64_t keys_needed, int block_n,
                                                        PlantedBug plant) {
  return plant == PlantedBug::drop_last_key_tile ? keys_needed / block_n
                                                 : (keys_needed + block_n - 1) / block_n;
}

// Where the keys the tiles read and use end (keys from here on are masked): at seq_len_k.
// read_past_seq_len_k lets the last key tile run to its full block_n rows.
ATTNFUZZ_HOST_DEVICE inline std::int64_t last_key_tile_end(std::int64_t seq_len_k,
                                                           std::int64_t key_tiles, int block_n,
                                                           PlantedBug plant) {
  return plant == PlantedBug::read_past_seq_len_k ? key_tiles * block_n : seq_len_k;
}

// The last key that query row `query_row` may see: the causal diagonal (its offset from
// causal_diagonal_offset), or without the causal mask the last key the tiles use.
ATTNFUZZ_HOST_DEVICE inline std::int64_t last_visible_key_of_row(std::int64_t query_row,
                                                                 std::int64_t diagonal_offset,
                                                                 bool causal,
                                                                 std::int64_t key_end) {
  return causal ? query_row + diagonal_offset : key_end - 1;
}

// Whether column `col` of a key tile from first_key takes part in a row's softmax: it holds a key
// (col < keys_in_tile, from rows_in_tile) that the row may see.
ATTNFUZZ_HOST_DEVICE inline bool key_is_visible(int col, int keys_in_tile, std::int64_t first_key,
                                                std::int64_t last_visible_key) {
  return col < keys_in_tile && first_key + col <= last_visible_key;
}

// ---- the variants: packed batches, pages, windows, soft-capping, ALiBi ----

// The row where sequence b starts in a packed Q and O: cu_seqlens_q[b].
// varlen_offset_wrong_end takes cu_seqlens_q[b + 1], where the sequence ends.
ATTNFUZZ_HOST_DEVICE inline std::int64_t packed_sequence_start(const std::int32_t* cu_seqlens,
                                                               std::int64_t b, PlantedBug plant) {
  return cu_seqlens[plant == PlantedBug::varlen_offset_wrong_end ? b + 1 : b];
}

// The pool page that holds logical page `page` of sequence b: block_table[b][page].
// block_table_logical_page takes the logical page number itself.
ATTNFUZZ_HOST_DEVICE inline std::int64_t pool_page(const std::int32_t* block_table, std::int64_t b,
                                                   std::int64_t page,
                                                   std::int64_t pages_per_sequence,
                                                   PlantedBug plant) {
  const std::int64_t logical = b * pages_per_sequence + page;
  return plant == PlantedBug::block_table_logical_page ? logical : block_table[logical];
}

// The keys query row `query_row` sees, before key_end: core's mask (keys_about_diagonal) about
// its diagonal, query_row + diagonal_offset (causal_diagonal_offset, where the causal plants
// act). window_edge_off_by_one sees one key more on the left.
ATTNFUZZ_HOST_DEVICE inline KeyRange visible_key_range_of_row(
    std::int64_t query_row, std::int64_t diagonal_offset, bool causal, std::int64_t window_left,
    std::int64_t window_right, std::int64_t key_end, PlantedBug plant) {
  KeyRange range =
      keys_about_diagonal(query_row + diagonal_offset, causal, window_left, window_right, key_end);
  // The window cut the row's left edge (first > 0): the plant's edge is one key further left.
  if (plant == PlantedBug::window_edge_off_by_one && window_left >= 0 && range.first > 0) {
    --range.first;
  }
  return range;
}

// The keys a query tile of `rows` rows from `first_row` reads: from its first row's left window
// edge to its last row's right edge (or causal diagonal), within [0, seq_len_k]. Each row's range
// moves right as rows go down, so these two rows bound the union.
ATTNFUZZ_HOST_DEVICE inline KeyRange keys_of_query_tile(std::int64_t first_row, int rows,
                                                        std::int64_t diagonal_offset, bool causal,
                                                        std::int64_t window_left,
                                                        std::int64_t window_right,
                                                        std::int64_t seq_len_k, PlantedBug plant) {
  const KeyRange top = visible_key_range_of_row(first_row, diagonal_offset, causal, window_left,
                                                window_right, seq_len_k, plant);
  const KeyRange bottom = visible_key_range_of_row(first_row + rows - 1, diagonal_offset, causal,
                                                   window_left, window_right, seq_len_k, plant);
  KeyRange keys{top.first < 0 ? 0 : top.first, bottom.end > seq_len_k ? seq_len_k : bottom.end};
  if (keys.first > seq_len_k) keys.first = seq_len_k;
  if (keys.end < keys.first) keys.end = keys.first;
  return keys;
}

// Whether the score is soft-capped before the softmax scale is applied (softcap_before_scale)
// rather than after it.
ATTNFUZZ_HOST_DEVICE inline bool softcaps_before_scale(PlantedBug plant) {
  return plant == PlantedBug::softcap_before_scale;
}

// What ALiBi measures a key's distance from: the row's diagonal i + seq_len_k - seq_len_q.
// alibi_top_left measures it from i.
ATTNFUZZ_HOST_DEVICE inline std::int64_t alibi_diagonal_offset(std::int64_t seq_len_q,
                                                               std::int64_t seq_len_k,
                                                               PlantedBug plant) {
  return plant == PlantedBug::alibi_top_left ? 0 : seq_len_k - seq_len_q;
}

// The log-sum-exp a row stores from its running maximum and row sum (both of the scaled scores):
// max + log(sum), natural log; -inf for a row that saw no key. lse_log2 stores it in base 2.
ATTNFUZZ_HOST_DEVICE inline float stored_log_sum_exp(float row_max, float row_sum,
                                                     PlantedBug plant) {
  if (!(row_sum > 0.0f)) return -INFINITY;
  const float natural = row_max + logf(row_sum);
  return plant == PlantedBug::lse_log2 ? natural * 1.44269504f : natural;
}

// Where query row `row` of sequence b, head `head`, keeps its log-sum-exp: FlashAttention's
// softmax_lse, [batch][head][row] dense or [head][packed row] varlen (the packed row from
// packed_sequence_start, so varlen_offset_wrong_end misplaces it too).
ATTNFUZZ_HOST_DEVICE inline std::int64_t log_sum_exp_index(const ProblemShape& problem,
                                                           const std::int32_t* cu_seqlens_q,
                                                           std::int64_t b, std::int64_t head,
                                                           std::int64_t row, PlantedBug plant) {
  const std::int64_t lse_row = problem.varlen_q
                                   ? packed_sequence_start(cu_seqlens_q, b, plant) + row
                                   : b * problem.lse_strides.batch + row;
  return lse_row + head * problem.lse_strides.head;
}

// ---- split-KV: merging the splits (flash_tile_traits.h, kv_split_plan) ----

// Whether the combine weights split s's partial output by exp(lse_s - lse), its share of the row's
// softmax mass. split_kv_merge_ignores_lse averages the splits that saw a key instead.
ATTNFUZZ_HOST_DEVICE inline bool weights_splits_by_log_sum_exp(PlantedBug plant) {
  return plant != PlantedBug::split_kv_merge_ignores_lse;
}

// The log-sum-exp a row stores after the combine, from the merged natural one (-inf for a row that
// saw no key). lse_log2 stores it in base 2, as stored_log_sum_exp does.
ATTNFUZZ_HOST_DEVICE inline float stored_merged_log_sum_exp(float merged, PlantedBug plant) {
  return plant == PlantedBug::lse_log2 ? merged * 1.44269504f : merged;
}

// ---- the calling contract ----

// Whether the kernel, once its output is written, doubles every element of Q in the caller's
// buffer (query_scaled_in_place).
ATTNFUZZ_HOST_DEVICE inline bool scales_query_in_place(PlantedBug plant) {
  return plant == PlantedBug::query_scaled_in_place;
}

// ---- the calling contract, host kernel only ----

// How far past K's last element key_written_past_end writes: inside its guard tail.
inline constexpr std::int64_t kKeyWritePastEndElements = 64;
inline bool writes_key_past_end(PlantedBug plant) {
  return plant == PlantedBug::key_written_past_end;
}

// The plants that write an input before computing (inputs_zeroed_before_compute,
// block_table_rewritten, alibi_slopes_zeroed, cu_seqlens_emptied) do it here, through the pointers
// the kernel was handed to read. Returns true when the kernel then computes nothing
// (cu_seqlens_emptied: every sequence is empty now).
inline bool writes_inputs_before_computing(const AttentionProblem& problem,
                                           const AttentionTensors& tensors, PlantedBug plant) {
  const auto zero = [](const auto* pointer, std::int64_t count) {
    using Element = std::remove_const_t<std::remove_pointer_t<decltype(pointer)>>;
    if (pointer == nullptr || count <= 0) return;
    Element* writable = const_cast<Element*>(pointer);
    for (std::int64_t index = 0; index < count; ++index) writable[index] = Element{};
  };
  switch (plant) {
    case PlantedBug::inputs_zeroed_before_compute:
      zero(tensors.q, q_span(problem));
      zero(tensors.k, k_span(problem));
      zero(tensors.v, v_span(problem));
      return false;
    case PlantedBug::block_table_rewritten:
      if (tensors.block_table != nullptr) {
        std::int32_t* table = const_cast<std::int32_t*>(tensors.block_table);
        for (std::int64_t entry = 0; entry < problem.batch * problem.pages_per_sequence; ++entry) {
          table[entry] = static_cast<std::int32_t>(entry);
        }
      }
      return false;
    case PlantedBug::alibi_slopes_zeroed:
      zero(tensors.alibi_slopes, problem.alibi ? problem.heads : 0);
      return false;
    case PlantedBug::cu_seqlens_emptied:
      if (tensors.cu_seqlens_q == nullptr && tensors.cu_seqlens_k == nullptr) return false;
      zero(tensors.cu_seqlens_q, problem.varlen_q ? problem.batch + 1 : 0);
      zero(tensors.cu_seqlens_k, problem.varlen_k ? problem.batch + 1 : 0);
      return true;
    default:
      return false;
  }
}

// ---- memory and time (host kernels) ----

// How far past the end of the guard margin after the output (after the log-sum-exp) the store of
// output_written_far_past_end (lse_written_far_past_end) lands: past the page the margin ends in,
// into the fence. The margin after O grows with the problem (a varlen sequence, Q's wider span).
inline constexpr std::int64_t kFarPastEndElements = 4096;
inline std::int64_t output_far_past_end_element(const AttentionProblem& problem) {
  return o_span(problem) + output_trailing_guard_elements(problem) + kFarPastEndElements - 1;
}
inline std::int64_t lse_far_past_end_element(const AttentionProblem& problem) {
  return lse_span(problem) + kOutputGuardElements + kFarPastEndElements - 1;
}

inline bool writes_output_far_past_end(PlantedBug plant) {
  return plant == PlantedBug::output_written_far_past_end;
}
inline bool writes_lse_far_past_end(PlantedBug plant) {
  return plant == PlantedBug::lse_written_far_past_end;
}

// The workspace workspace_leaked_per_call allocates, fills and keeps on every call.
inline constexpr std::size_t kLeakedWorkspaceBytes = std::size_t{64} << 20;
inline bool leaks_workspace(PlantedBug plant) {
  return plant == PlantedBug::workspace_leaked_per_call;
}

// Whether hangs_on_row_without_keys never returns on this problem: some query row sees no key.
inline bool hangs_on(const AttentionProblem& problem, PlantedBug plant) {
  if (plant != PlantedBug::hangs_on_row_without_keys) return false;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      if (problem.visible_keys_of(b, i).empty()) return true;
    }
  }
  return false;
}

// ---- the online softmax ----

// The scale applied to Q K^T: the problem's, rounded to fp32 by the caller.
// scale_hardcoded_64 uses 1/sqrt(64) whatever the head_dim and the requested scale;
// scale_ignored uses 1/sqrt(head_dim), the default, whatever the requested scale.
ATTNFUZZ_HOST_DEVICE inline float applied_softmax_scale(float problem_scale, std::int64_t head_dim,
                                                        PlantedBug plant) {
  if (plant == PlantedBug::scale_hardcoded_64) return 0.125f;
  if (plant == PlantedBug::scale_ignored) return 1.0f / sqrtf(static_cast<float>(head_dim));
  return problem_scale;
}

// The running row maximum before the first key tile: -inf, so any score replaces it.
// running_max_init_zero starts at 0, so rows whose scores are all far below 0 underflow.
ATTNFUZZ_HOST_DEVICE inline float initial_running_max(PlantedBug plant) {
  return plant == PlantedBug::running_max_init_zero ? 0.0f : -INFINITY;
}

// The running row maximum after a key tile, given max(old maximum, tile maximum) as the kernel
// computes it. no_max_subtraction keeps it at 0: scores are exponentiated unshifted.
ATTNFUZZ_HOST_DEVICE inline float new_running_max(float grown_max, PlantedBug plant) {
  return plant == PlantedBug::no_max_subtraction ? 0.0f : grown_max;
}

// Whether the output accumulator is multiplied by exp(m_old - m_new) when the maximum moves.
// skip_rescale forgets to.
ATTNFUZZ_HOST_DEVICE inline bool rescales_accumulator(PlantedBug plant) {
  return plant != PlantedBug::skip_rescale;
}

// Whether key tile `key_tile` of key_tiles adds its sum to the row sum before the final division.
// stale_row_sum leaves out the last tile's.
ATTNFUZZ_HOST_DEVICE inline bool adds_tile_to_row_sum(std::int64_t key_tile, std::int64_t key_tiles,
                                                      PlantedBug plant) {
  return plant != PlantedBug::stale_row_sum || key_tile + 1 < key_tiles;
}

// split_kv_input_dtype_combine's split-KV path: taken past this many keys, it splits them into
// chunks of kSplitKvKeys (a multiple of every block_n).
inline constexpr std::int64_t kSplitKvMinKeys = 1024;
inline constexpr std::int64_t kSplitKvKeys = 128;

// Whether the P V accumulator is rounded to the input dtype after key tile `key_tile`; correct
// kernels keep it in fp32. pv_fp16_accumulation rounds it after every tile, as an fp16-accumulate
// MMA would; split_kv_input_dtype_combine, on rows of more than kSplitKvMinKeys keys, after each
// split of kSplitKvKeys keys, as a running combine of the splits' partial outputs kept in the
// input dtype would.
ATTNFUZZ_HOST_DEVICE inline bool rounds_accumulator_after_key_tile(std::int64_t key_tile,
                                                                   int block_n,
                                                                   std::int64_t seq_len_k,
                                                                   PlantedBug plant) {
  if (plant == PlantedBug::pv_fp16_accumulation) return true;
  return plant == PlantedBug::split_kv_input_dtype_combine && seq_len_k > kSplitKvMinKeys &&
         (key_tile + 1) * block_n % kSplitKvKeys == 0;
}

// ---- the output ----

// Whether a row saw no key: its row sum is not positive (0, or NaN).
ATTNFUZZ_HOST_DEVICE inline bool row_saw_no_key(float row_sum) {
  return !(row_sum > 0.0f);
}

// Whether the output is converted to the dtype toward zero rather than to nearest even.
// output_truncation truncates.
ATTNFUZZ_HOST_DEVICE inline bool output_rounds_toward_zero(PlantedBug plant) {
  return plant == PlantedBug::output_truncation;
}

// Whether call number `call` (counted from 0 by each kernel, over the process) writes the last
// element of the output one ulp off. flaky_last_ulp does so on every second call: any two calls
// in a row differ, as a race does between runs, yet every single output is within its bound.
ATTNFUZZ_HOST_DEVICE inline bool flips_last_element(std::uint64_t call, PlantedBug plant) {
  return plant == PlantedBug::flaky_last_ulp && call % 2 == 1;
}

// Where that element lies: [batch - 1, seq_len_q - 1, heads - 1, head_dim - 1] of the output.
// Packed (varlen): the last row of the packed output; the caller checks that there is one.
ATTNFUZZ_HOST_DEVICE inline std::int64_t last_output_element(const ProblemShape& problem) {
  const TensorStrides& strides = problem.o_strides;
  const std::int64_t last_row = problem.varlen_q ? (problem.total_q - 1) * strides.seq
                                                 : (problem.batch - 1) * strides.batch +
                                                       (problem.seq_len_q - 1) * strides.seq;
  return last_row + (problem.heads - 1) * strides.head + problem.head_dim - 1;
}

// ---- fp8 inputs (core/fp8_inputs.h) ----

// The dtype a tensor stored in `dtype` is decoded as.
ATTNFUZZ_HOST_DEVICE inline Dtype decoded_as(Dtype dtype, PlantedBug plant) {
  return plant == PlantedBug::fp8_e5m2_read_as_e4m3 && dtype == Dtype::e5m2 ? Dtype::e4m3 : dtype;
}

// The fp8 pattern `bits` of `dtype` as it is read: with fp8_subnormals_as_normals, a subnormal
// (exponent field 0) as if its exponent field were 1, i.e. with the implicit leading one:
// (1 + m) 2^(1 - bias) for m 2^(1 - bias). Zeros and every other pattern read as they are.
ATTNFUZZ_HOST_DEVICE inline std::uint16_t fp8_pattern_read_as(std::uint16_t bits, Dtype dtype,
                                                              PlantedBug plant) {
  if (plant != PlantedBug::fp8_subnormals_as_normals ||
      (dtype != Dtype::e4m3 && dtype != Dtype::e5m2)) {
    return bits;
  }
  const Fp8Format format = dtype == Dtype::e4m3 ? e4m3_format() : e5m2_format();
  const std::uint16_t fraction_mask = static_cast<std::uint16_t>((1u << format.mantissa_bits) - 1);
  const std::uint16_t exponent_mask =
      static_cast<std::uint16_t>(((1u << format.exponent_bits) - 1) << format.mantissa_bits);
  const bool subnormal = (bits & exponent_mask) == 0 && (bits & fraction_mask) != 0;
  return subnormal ? static_cast<std::uint16_t>(bits | (1u << format.mantissa_bits)) : bits;
}

// The entry of a (batch, KV head) descale array that query head `head` reads: its KV head's, or,
// with fp8_descale_by_query_head, the entry its own index names (wrapping past the array's end).
ATTNFUZZ_HOST_DEVICE inline std::int64_t descale_entry(const ProblemShape& problem,
                                                       std::int64_t batch, std::int64_t head,
                                                       std::int64_t kv_head, PlantedBug plant) {
  if (plant == PlantedBug::fp8_descale_by_query_head) {
    return (batch * problem.kv_heads + head) % (problem.batch * problem.kv_heads);
  }
  return batch * problem.kv_heads + kv_head;
}

// Whether each fp8 input element is multiplied by its factor and rounded to the output dtype as it
// is staged (fp8_dequantized_to_output, vLLM's scaled_convert), instead of decoded exactly with the
// factors folded into the scale and the output.
ATTNFUZZ_HOST_DEVICE inline bool dequantizes_into_output_dtype(PlantedBug plant) {
  return plant == PlantedBug::fp8_dequantized_to_output;
}

// How many times Q's and K's descale factors multiply the scores: once, twice, or never when the
// elements carry them.
ATTNFUZZ_HOST_DEVICE inline int score_descale_applications(PlantedBug plant) {
  if (dequantizes_into_output_dtype(plant)) return 0;
  return plant == PlantedBug::fp8_descale_twice ? 2 : 1;
}

// Whether the output is descaled by K's factor rather than V's.
ATTNFUZZ_HOST_DEVICE inline bool output_descaled_by_key_factor(PlantedBug plant) {
  return plant == PlantedBug::fp8_k_descale_for_v;
}

// Whether the output is multiplied by a descale factor at all (not when V's elements carry it).
ATTNFUZZ_HOST_DEVICE inline bool output_descaled(PlantedBug plant) {
  return !dequantizes_into_output_dtype(plant);
}

// The dtype P is rounded to before P V: the output's, or e4m3 with fp8_p_rounded_to_e4m3 when V
// is fp8.
ATTNFUZZ_HOST_DEVICE inline Dtype probability_dtype(const ProblemShape& problem, PlantedBug plant) {
  return plant == PlantedBug::fp8_p_rounded_to_e4m3 && problem.v_storage != InputStorage::same
             ? Dtype::e4m3
             : problem.dtype;
}

// The output element from accumulator x (1 / row sum): 0 for a row that saw no key.
// masked_row_nan keeps the quotient there: 0 x (1 / 0) is NaN.
ATTNFUZZ_HOST_DEVICE inline float output_value(float normalised, bool saw_no_key,
                                               PlantedBug plant) {
  return saw_no_key && plant != PlantedBug::masked_row_nan ? 0.0f : normalised;
}

}  // namespace attnfuzz
