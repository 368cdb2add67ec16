// SPDX-License-Identifier: BSD-3-Clause
// The float64 oracle. Work is split into (batch, head, block of query rows) items spread over the
// machine's threads; each item widens its inputs exactly to double and computes
//   S = scale * Q K^T     DGEMM over the keys the block's last row can see (causal: fewer)
//   P = softmax(S)        masked and max-subtracted, in double
//   O = P V               DGEMM
//   A = P |V|             SGEMM on P rounded to float, then rounded up to a bound: A only scales
//                         the tolerance, where float's 2^-24 is ample (magnitude_excess).
// Every element of the result is written by exactly one item, so its buffers need no clearing
// and may be reused. OpenBLAS runs single-threaded inside each item (single_threaded_blas.h).
#include "oracle/reference_attention.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "oracle/row_norm.h"
#include "oracle/score_row.h"
#include "oracle/single_threaded_blas.h"
#include "oracle/softmax_row.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

// Query rows per work item: enough for DGEMM to run near peak, small enough that the score block
// (rows x seq_len_k doubles) stays modest and that short sequences still give every core work.
constexpr std::int64_t kRowsPerItem = 128;

// Keys per SGEMM of the magnitude: float's summation error grows with the keys summed, so long
// rows are summed in chunks whose partial sums are added in double.
constexpr std::int64_t kMagnitudeChunkKeys = 4096;

struct Workspace {
  // K and V of the (call, batch, kv head) last widened: consecutive items usually share it.
  std::uint64_t cached_call = 0;
  std::int64_t cached_batch = -1, cached_kv_head = -1;
  double max_key_norm = 0.0;
  LargeBuffer<double> query;          // [rows][head_dim]
  LargeBuffer<double> key;            // [seq_len_k][head_dim]
  LargeBuffer<double> value;          // [seq_len_k][head_dim]
  LargeBuffer<float> value_abs;       // [seq_len_k][head_dim], exact: fp16/bf16 fit in float
  LargeBuffer<double> value_abs_sum;  // [head_dim]
  LargeBuffer<double> scores;         // [rows][keys], then probabilities (unnormalised)
  LargeBuffer<float> probabilities;   // [rows][keys], normalised, rounded to float
  LargeBuffer<double> result;         // [rows][head_dim]
  LargeBuffer<float> magnitude_part;  // [rows][head_dim], one chunk's SGEMM
  LargeBuffer<double> magnitude;      // [rows][head_dim], the chunks' sum
};

// Rows are strided (heads * head_dim apart in BSHD) and read once: the prefetcher does not see
// them coming, so each row asks for the one kPrefetchRows ahead of it.
constexpr std::int64_t kPrefetchRows = 8;
constexpr std::int64_t kElementsPerCacheLine = 32;

// One row's values: its patterns widened, times the tensor's descale factor (1 but for fp8
// inputs), both exact in double (an fp8 significand of 4 bits times a float's 24).
void widen_row_scaled(const std::uint16_t* in, std::int64_t dim, Dtype dtype, double factor,
                      double* out) {
  widen_to_double(in, dim, dtype, out);
  if (factor != 1.0) {
    for (std::int64_t d = 0; d < dim; ++d) out[d] *= factor;
  }
}

void widen_rows(const std::uint16_t* base, std::int64_t row_stride, std::int64_t rows,
                std::int64_t dim, Dtype dtype, double factor, double* out,
                std::int64_t out_stride) {
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::uint16_t* in = base + row * row_stride;
    if (row + kPrefetchRows < rows) {
      for (std::int64_t d = 0; d < dim; d += kElementsPerCacheLine) {
        __builtin_prefetch(in + kPrefetchRows * row_stride + d);
      }
    }
    widen_row_scaled(in, dim, dtype, factor, out + row * out_stride);
  }
}

// Query rows per item: whole heads when there are enough of them to keep every thread busy,
// otherwise blocks of kRowsPerItem rows so that a few long heads still spread over all cores.
std::int64_t rows_per_item(const AttentionProblem& problem, int threads) {
  const std::int64_t heads = problem.batch * problem.heads;
  if (heads >= 4 * static_cast<std::int64_t>(threads) && problem.seq_len_q <= 4 * kRowsPerItem) {
    return problem.seq_len_q;
  }
  return kRowsPerItem;
}

// gamma(n) = n u / (1 - n u) for float's u: the classic bound on a float sum of n terms.
double float_sum_gamma(std::int64_t terms) {
  const double nu = static_cast<double>(terms) * 0x1p-24;
  return nu / (1.0 - nu);
}

// Relative error of the oracle's own float64 probabilities (exp within 4 ulp, a sum of
// seq_len_k terms, one division), with room to spare.
double float64_side(std::int64_t seq_len_k) {
  return 1.0 + static_cast<double>(seq_len_k + 16) * 0x1p-52;
}

// What the float sum is multiplied by so that it never falls below A: it undoes the largest
// downward error of rounding P to float (u) and of the SGEMM's sum (gamma of one chunk).
double magnitude_inflation(std::int64_t seq_len_k) {
  const double gamma = float_sum_gamma(std::min(seq_len_k, kMagnitudeChunkKeys));
  return float64_side(seq_len_k) / ((1.0 - gamma) * (1.0 - 0x1p-24));
}

// Where one work item lies: a block of query rows of one (batch, head).
struct RowBlock {
  std::int64_t batch, head, kv_head, block;
  std::int64_t first_row, rows;
  std::int64_t live_rows;       // rows before the sequence's end (varlen: fewer than rows)
  std::int64_t row_index_base;  // the first row's index in [batch][heads][seq_len_q]
  std::int64_t keys;            // keys before the last (most seeing) row's end; 0: none seen
};

// Items run block fastest, then head, then batch: consecutive items share their K and V.
RowBlock locate_block(const AttentionProblem& problem, std::int64_t item, std::int64_t block_rows,
                      std::int64_t row_blocks) {
  RowBlock where;
  where.block = item % row_blocks;
  where.head = (item / row_blocks) % problem.heads;
  where.batch = item / (row_blocks * problem.heads);
  where.kv_head = where.head / problem.group_size();
  where.first_row = where.block * block_rows;
  where.rows = std::min(block_rows, problem.seq_len_q - where.first_row);
  where.row_index_base =
      (where.batch * problem.heads + where.head) * problem.seq_len_q + where.first_row;
  where.live_rows =
      std::clamp<std::int64_t>(problem.seq_len_q_of(where.batch) - where.first_row, 0, where.rows);
  where.keys = 0;
  if (where.live_rows > 0) {
    // Both ends of a row's keys move right as rows go down (causal and window alike), and a row
    // sees none only when its end is at or before key 0: the block's last row sees the most, and
    // when it sees none neither does any row above it.
    const KeyRange last =
        problem.visible_keys_of(where.batch, where.first_row + where.live_rows - 1);
    where.keys = last.empty() ? 0 : last.end;
  }
  return where;
}

void widen_keys_and_values(const AttentionProblem& problem, const AttentionTensors& tensors,
                           const RowBlock& where, Workspace& work) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t seq_k = problem.seq_len_k_of(where.batch);
  resize_for_overwrite(work.key, static_cast<std::size_t>(seq_k * dim));
  resize_for_overwrite(work.value, static_cast<std::size_t>(seq_k * dim));
  if (seq_k == 0) return;
  const double key_factor =
      descale_at(tensors.k_descale, problem.kv_heads, where.batch, where.kv_head);
  const double value_factor =
      descale_at(tensors.v_descale, problem.kv_heads, where.batch, where.kv_head);
  if (problem.paged()) {  // rows are contiguous only within a page: one row at a time
    for (std::int64_t j = 0; j < seq_k; ++j) {
      widen_row_scaled(key_row(problem, tensors, where.batch, j, where.kv_head), dim,
                       problem.k_dtype(), key_factor, work.key.data() + j * dim);
      widen_row_scaled(value_row(problem, tensors, where.batch, j, where.kv_head), dim,
                       problem.v_dtype(), value_factor, work.value.data() + j * dim);
    }
    return;
  }
  widen_rows(key_row(problem, tensors, where.batch, 0, where.kv_head), problem.k_strides.seq, seq_k,
             dim, problem.k_dtype(), key_factor, work.key.data(), dim);
  widen_rows(value_row(problem, tensors, where.batch, 0, where.kv_head), problem.v_strides.seq,
             seq_k, dim, problem.v_dtype(), value_factor, work.value.data(), dim);
}

// |V| in float for the magnitude's SGEMM, its column sums, and the largest |K_j| (score_scale).
void summarize_keys_and_values(std::int64_t seq_k, std::int64_t dim, Workspace& work) {
  resize_for_overwrite(work.value_abs, static_cast<std::size_t>(seq_k * dim));
  work.value_abs_sum.assign(static_cast<std::size_t>(dim), 0.0);
  work.max_key_norm = 0.0;
  for (std::int64_t j = 0; j < seq_k; ++j) {
#pragma omp simd
    for (std::int64_t d = 0; d < dim; ++d) {
      const double magnitude = std::fabs(work.value[j * dim + d]);
      work.value_abs[j * dim + d] = static_cast<float>(magnitude);
      work.value_abs_sum[d] += magnitude;
    }
    work.max_key_norm = std::max(work.max_key_norm, euclidean_norm(&work.key[j * dim], dim));
  }
}

// Widens K and V anew only when the item's (call, batch, kv head) is not the one cached.
void refresh_keys_and_values(const AttentionProblem& problem, const AttentionTensors& tensors,
                             std::uint64_t call, const RowBlock& where, Workspace& work) {
  if (work.cached_call == call && work.cached_batch == where.batch &&
      work.cached_kv_head == where.kv_head) {
    return;
  }
  widen_keys_and_values(problem, tensors, where, work);
  summarize_keys_and_values(problem.seq_len_k_of(where.batch), problem.head_dim, work);
  work.cached_batch = where.batch;
  work.cached_kv_head = where.kv_head;
  work.cached_call = call;
}

// One item per (batch, kv head) publishes the column sums of |V|.
void publish_value_abs_sum(const AttentionProblem& problem, const RowBlock& where,
                           const Workspace& work, ReferenceAttention& reference) {
  if (where.block != 0 || where.head % problem.group_size() != 0) return;
  std::copy(work.value_abs_sum.begin(), work.value_abs_sum.end(),
            reference.value_abs_sum.begin() +
                (where.batch * problem.kv_heads + where.kv_head) * problem.head_dim);
}

void widen_query_block(const AttentionProblem& problem, const AttentionTensors& tensors,
                       const RowBlock& where, Workspace& work) {
  const std::int64_t dim = problem.head_dim;
  resize_for_overwrite(work.query, static_cast<std::size_t>(where.live_rows * dim));
  if (where.live_rows == 0) return;
  widen_rows(query_row(problem, tensors, where.batch, where.first_row, where.head),
             problem.q_strides.seq, where.live_rows, dim, problem.q_dtype(),
             descale_at(tensors.q_descale, problem.kv_heads, where.batch, where.kv_head),
             work.query.data(), dim);
}

// scale * |Q_i| * max_j |K_j| bounds every score of row i before soft-capping and ALiBi; the
// largest |ALiBi bias| the row sees bounds what ALiBi adds.
void store_score_scales(const AttentionProblem& problem, const RowBlock& where,
                        const Workspace& work, ReferenceAttention& reference) {
  const std::int64_t dim = problem.head_dim;
  for (std::int64_t row = 0; row < where.live_rows; ++row) {
    reference.score_scale[where.row_index_base + row] =
        problem.softmax_scale * euclidean_norm(&work.query[row * dim], dim) * work.max_key_norm;
    reference.bias_scale[where.row_index_base + row] =
        problem.largest_bias(where.batch, where.head, where.first_row + row);
  }
}

// Rows from `from` on of the block: masked or past the sequence's end. Output 0, nothing to
// bound, the log-sum-exp of no key (-inf).
void zero_rows(std::int64_t dim, const RowBlock& where, std::int64_t from,
               ReferenceAttention& reference) {
  const std::int64_t base = where.row_index_base + from;
  const std::int64_t rows = where.rows - from;
  std::fill_n(reference.output.begin() + base * dim, rows * dim, 0.0);
  std::fill_n(reference.magnitude.begin() + base * dim, rows * dim, 0.0);
  std::fill_n(reference.inverse_row_sum.begin() + base, rows, 0.0);
  std::fill_n(reference.log_sum_exp.begin() + base, rows, -std::numeric_limits<double>::infinity());
  if (from >= where.live_rows) {
    std::fill_n(reference.score_scale.begin() + base, rows, 0.0);
    std::fill_n(reference.bias_scale.begin() + base, rows, 0.0);
  }
}

// S = scale * Q K^T over the keys the block sees.
void scores_for_block(const AttentionProblem& problem, const RowBlock& where, Workspace& work) {
  const std::int64_t dim = problem.head_dim;
  resize_for_overwrite(work.scores, static_cast<std::size_t>(where.live_rows * where.keys));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(where.live_rows),
              static_cast<int>(where.keys), static_cast<int>(dim), problem.softmax_scale,
              work.query.data(), static_cast<int>(dim), work.key.data(), static_cast<int>(dim), 0.0,
              work.scores.data(), static_cast<int>(where.keys));
}

// Scores become exp(s - max) (unnormalised, for P V) and the normalised probabilities in float
// (for the magnitude); keys a row may not see become 0 in both. The inverse row sums are applied
// after P V.
void softmax_rows(const AttentionProblem& problem, const RowBlock& where, Workspace& work,
                  ReferenceAttention& reference) {
  const std::int64_t keys = where.keys;
  resize_for_overwrite(work.probabilities, static_cast<std::size_t>(where.live_rows * keys));
  for (std::int64_t row = 0; row < where.live_rows; ++row) {
    const std::int64_t query = where.first_row + row;
    const KeyRange visible = visible_keys_within(problem, where.batch, query, keys);
    double* scores = &work.scores[row * keys];
    float* probabilities = &work.probabilities[row * keys];
    double inverse = 0.0;  // fully masked row: output 0, nothing to bound
    double log_sum_exp = -std::numeric_limits<double>::infinity();
    const std::int64_t count = visible.end - visible.first;
    if (count > 0) {
      double* seen = scores + visible.first;
      logits_from_scores(problem, where.batch, where.head, query, visible.first, count, seen);
      const double row_max = row_maximum(seen, count);
      const double sum = exponentiate_and_sum(seen, count, row_max);
      inverse = 1.0 / sum;
      log_sum_exp = row_max + std::log(sum);
      scale_to_float(seen, count, inverse, probabilities + visible.first);
    }
    std::fill(scores, scores + visible.first, 0.0);
    std::fill(probabilities, probabilities + visible.first, 0.0f);
    std::fill(scores + visible.end, scores + keys, 0.0);
    std::fill(probabilities + visible.end, probabilities + keys, 0.0f);
    reference.inverse_row_sum[where.row_index_base + row] = inverse;
    reference.log_sum_exp[where.row_index_base + row] = log_sum_exp;
  }
}

// Unnormalised O = exp(S - max) V.
void accumulate_values(std::int64_t dim, const RowBlock& where, Workspace& work) {
  resize_for_overwrite(work.result, static_cast<std::size_t>(where.live_rows * dim));
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(where.live_rows),
              static_cast<int>(dim), static_cast<int>(where.keys), 1.0, work.scores.data(),
              static_cast<int>(where.keys), work.value.data(), static_cast<int>(dim), 0.0,
              work.result.data(), static_cast<int>(dim));
}

// A ~ P |V| in float, kMagnitudeChunkKeys keys per SGEMM, the chunks summed in double.
void accumulate_magnitude(std::int64_t dim, const RowBlock& where, Workspace& work) {
  const std::int64_t rows = where.live_rows;
  const std::int64_t keys = where.keys;
  resize_for_overwrite(work.magnitude_part, static_cast<std::size_t>(rows * dim));
  work.magnitude.assign(static_cast<std::size_t>(rows * dim), 0.0);
  for (std::int64_t first_key = 0; first_key < keys; first_key += kMagnitudeChunkKeys) {
    const std::int64_t chunk = std::min(kMagnitudeChunkKeys, keys - first_key);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(dim), static_cast<int>(chunk), 1.0f,
                work.probabilities.data() + first_key, static_cast<int>(keys),
                work.value_abs.data() + first_key * dim, static_cast<int>(dim), 0.0f,
                work.magnitude_part.data(), static_cast<int>(dim));
#pragma omp simd
    for (std::int64_t e = 0; e < rows * dim; ++e) work.magnitude[e] += work.magnitude_part[e];
  }
}

// O = result / row sum; the bound is the magnitude plus float's underflow, then inflated to undo
// its rounding.
void normalize_and_bound_rows(std::int64_t dim, const RowBlock& where, double inflation,
                              const Workspace& work, ReferenceAttention& reference) {
  const double* value_abs_sum = work.value_abs_sum.data();
  const double underflow = static_cast<double>(where.keys) * 0x1p-149;
  for (std::int64_t row = 0; row < where.live_rows; ++row) {
    const std::int64_t row_index = where.row_index_base + row;
    const double inverse = reference.inverse_row_sum[row_index];
    const double* result = &work.result[row * dim];
    const double* magnitude = &work.magnitude[row * dim];
    double* output = &reference.output[row_index * dim];
    double* bound = &reference.magnitude[row_index * dim];
    if (inverse == 0.0) {  // masked row: exactly 0, and nothing to bound
      std::fill_n(output, dim, 0.0);
      std::fill_n(bound, dim, 0.0);
      continue;
    }
#pragma omp simd
    for (std::int64_t d = 0; d < dim; ++d) {
      output[d] = result[d] * inverse;
      bound[d] = (magnitude[d] + value_abs_sum[d] * 0x1p-149 + underflow) * inflation;
    }
  }
}

// One work item, every stage in order; `work` carries the widened inputs and the products from
// stage to stage.
void reference_for_block(const AttentionProblem& problem, const AttentionTensors& tensors,
                         std::uint64_t call, double inflation, const RowBlock& where,
                         Workspace& work, ReferenceAttention& reference) {
  const std::int64_t dim = problem.head_dim;
  refresh_keys_and_values(problem, tensors, call, where, work);
  publish_value_abs_sum(problem, where, work, reference);
  widen_query_block(problem, tensors, where, work);
  store_score_scales(problem, where, work, reference);
  if (where.keys == 0) {
    zero_rows(dim, where, 0, reference);
    return;
  }
  if (where.live_rows < where.rows) zero_rows(dim, where, where.live_rows, reference);
  scores_for_block(problem, where, work);
  softmax_rows(problem, where, work, reference);
  accumulate_values(dim, where, work);
  accumulate_magnitude(dim, where, work);
  normalize_and_bound_rows(dim, where, inflation, work, reference);
}

}  // namespace

void size_reference(const AttentionProblem& problem, ReferenceAttention& reference) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t rows_total = problem.batch * problem.heads * problem.seq_len_q;
  resize_for_overwrite(reference.output, static_cast<std::size_t>(rows_total * dim));
  resize_for_overwrite(reference.magnitude, static_cast<std::size_t>(rows_total * dim));
  resize_for_overwrite(reference.inverse_row_sum, static_cast<std::size_t>(rows_total));
  resize_for_overwrite(reference.score_scale, static_cast<std::size_t>(rows_total));
  resize_for_overwrite(reference.bias_scale, static_cast<std::size_t>(rows_total));
  resize_for_overwrite(reference.log_sum_exp, static_cast<std::size_t>(rows_total));
  resize_for_overwrite(reference.value_abs_sum,
                       static_cast<std::size_t>(problem.batch * problem.kv_heads * dim));
}

double magnitude_excess(std::int64_t seq_len_k) {
  const double gamma = float_sum_gamma(std::min(seq_len_k, kMagnitudeChunkKeys));
  return magnitude_inflation(seq_len_k) * (1.0 + gamma) * (1.0 + 0x1p-24) * float64_side(seq_len_k);
}

double magnitude_underflow_slack(double value_abs_sum, std::int64_t seq_len_k) {
  // Probabilities below float's normal range are off by up to 2^-150 each (value_abs_sum times
  // that), and each multiply-add of the SGEMM by up to 2^-150 when its result is subnormal; the
  // oracle adds 2^-149 of both, then inflates, so the bound is twice that, rounded up.
  return (value_abs_sum + static_cast<double>(seq_len_k)) * 0x1p-147;
}

void reference_attention(const AttentionProblem& problem, const AttentionTensors& tensors,
                         ReferenceAttention& reference, int threads) {
  use_single_threaded_blas();
  static std::atomic<std::uint64_t> calls{0};
  const std::uint64_t call = ++calls;  // identifies this call's inputs in the per-thread caches
  size_reference(problem, reference);
  const double inflation = magnitude_inflation(problem.seq_len_k);
  const std::int64_t block_rows =
      rows_per_item(problem, threads > 0 ? threads : default_thread_count());
  const std::int64_t row_blocks = (problem.seq_len_q + block_rows - 1) / block_rows;
  parallel_for(
      problem.batch * problem.heads * row_blocks,
      [&](std::int64_t item) {
        thread_local Workspace work;
        reference_for_block(problem, tensors, call, inflation,
                            locate_block(problem, item, block_rows, row_blocks), work, reference);
      },
      threads);
}

ReferenceAttention reference_attention(const AttentionProblem& problem,
                                       const AttentionTensors& tensors, int threads) {
  ReferenceAttention reference;
  reference_attention(problem, tensors, reference, threads);
  return reference;
}

void pad_score_scales(const AttentionProblem& problem, const AttentionTensors& tensors,
                      const DeclaredNumerics& numerics, ReferenceAttention& reference) {
  const double query_padding = numerics.dequantization_norm_padding(problem, problem.q_storage);
  const double key_padding = numerics.dequantization_norm_padding(problem, problem.k_storage);
  if (query_padding == 0.0 && key_padding == 0.0) return;
  const std::int64_t dim = problem.head_dim;
  // A row's values as the oracle reads them (decoded, times the factor), and their norm.
  std::vector<double> values(static_cast<std::size_t>(dim));
  const auto norm = [&](const std::uint16_t* row, Dtype dtype, double factor) {
    const std::span<const float> widen = widening_table(dtype);
    for (std::int64_t d = 0; d < dim; ++d) {
      values[static_cast<std::size_t>(d)] = static_cast<double>(widen[row[d]]) * factor;
    }
    return euclidean_norm(values.data(), dim);
  };
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
      const double key_factor = descale_at(tensors.k_descale, problem.kv_heads, b, kv);
      double key_norm = 0.0;
      for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
        key_norm = std::max(
            key_norm, norm(key_row(problem, tensors, b, j, kv), problem.k_dtype(), key_factor));
      }
      key_norm += key_padding;
      const double query_factor = descale_at(tensors.q_descale, problem.kv_heads, b, kv);
      for (std::int64_t h = kv * problem.group_size(); h < (kv + 1) * problem.group_size(); ++h) {
        for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
          if (problem.visible_keys_of(b, i).empty()) continue;  // masked: nothing to bound
          const double query_norm =
              norm(query_row(problem, tensors, b, i, h), problem.q_dtype(), query_factor);
          reference.score_scale[(b * problem.heads + h) * problem.seq_len_q + i] =
              problem.softmax_scale * (query_norm + query_padding) * key_norm;
        }
      }
    }
  }
}

}  // namespace attnfuzz

namespace attnfuzz {

std::string blas_description() {
  return openblas_get_config();
}

}  // namespace attnfuzz
