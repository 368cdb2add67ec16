// SPDX-License-Identifier: BSD-3-Clause
// Plain attention in the input precision (see plain_attention.h): the yardstick for
// FlashAttention's "at most twice the error of a same-precision reference" rule. It follows the
// unfused reference of FlashAttention's tests with upcast off: Q is scaled and rounded, scores are
// rounded to the dtype, softmax runs in fp32 and its probabilities are rounded, then P V is
// rounded. Matrix products use SGEMM on the exactly widened inputs (fp32 accumulation), but P V in
// a declared accumulation dtype, which is a loop rounding every partial sum; P in a declared dtype
// is rounded before its division by the row sum (plain_attention.h).
#include "oracle/plain_attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "oracle/single_threaded_blas.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {

namespace {

// out[i][d] = sum_j P[i][j] V[j][d] as the declared accumulator forms it: each block of
// keys_per_rounding keys summed in fp32, then added to the accumulator and rounded to its dtype.
void accumulate_as_declared(const float* probabilities, const float* value, std::int64_t seq_q,
                            std::int64_t seq_k, std::int64_t dim, const DeclaredNumerics& numerics,
                            Dtype accumulator, float* out) {
  const std::int64_t block = numerics.keys_per_rounding;
  for (std::int64_t i = 0; i < seq_q; ++i) {
    for (std::int64_t d = 0; d < dim; ++d) {
      float sum = 0.0f;
      for (std::int64_t first = 0; first < seq_k; first += block) {
        float block_sum = 0.0f;
        for (std::int64_t j = first; j < std::min(first + block, seq_k); ++j) {
          block_sum += probabilities[i * seq_k + j] * value[j * dim + d];
        }
        sum = round_to_dtype(sum + block_sum, accumulator);
      }
      out[i * dim + d] = sum;
    }
  }
}

}  // namespace

PlainHead plain_head(const AttentionProblem& problem, const AttentionTensors& tensors,
                     std::int64_t batch, std::int64_t head, bool keep_capped_tanh,
                     const DeclaredNumerics& numerics) {
  const std::int64_t dim = problem.head_dim;
  const Dtype dtype = problem.dtype;
  const float scale = static_cast<float>(problem.softmax_scale);
  const std::int64_t kv_head = head / problem.group_size();
  // fp8 inputs are dequantized into the dtype first, as an unfused framework path does: each
  // value times its descale factor, rounded (for the other inputs both steps change nothing); into
  // the dtype a kernel declares it dequantizes them into (--dequantize-to), where it declares one.
  const Dtype dequantized = numerics.dequantization_dtype(problem).value_or(dtype);
  const float query_factor = descale_at(tensors.q_descale, problem.kv_heads, batch, kv_head);
  const float key_factor = descale_at(tensors.k_descale, problem.kv_heads, batch, kv_head);
  const float value_factor = descale_at(tensors.v_descale, problem.kv_heads, batch, kv_head);
  const std::span<const float> widen_q = widening_table(problem.q_dtype());
  PlainHead plain;
  const std::int64_t seq_q = plain.seq_q = problem.seq_len_q_of(batch);
  const std::int64_t seq_k = plain.seq_k = problem.seq_len_k_of(batch);
  if (seq_q == 0 || seq_k == 0) return plain;
  plain.query.resize(static_cast<std::size_t>(seq_q * dim));
  plain.key.resize(static_cast<std::size_t>(seq_k * dim));
  plain.value.resize(static_cast<std::size_t>(seq_k * dim));
  plain.probabilities.resize(static_cast<std::size_t>(seq_q * seq_k));
  if (problem.softcap > 0.0 && keep_capped_tanh) {
    plain.capped_tanh.assign(plain.probabilities.size(), 0.0f);
  }
  std::vector<float>& query = plain.query;
  std::vector<float>& key = plain.key;
  std::vector<float>& value = plain.value;
  std::vector<float>& scores = plain.probabilities;
  for (std::int64_t i = 0; i < seq_q; ++i) {
    const std::uint16_t* row = query_row(problem, tensors, batch, i, head);
    for (std::int64_t d = 0; d < dim; ++d) {
      query[i * dim + d] =
          query_factor == 1.0f
              ? widen_q[row[d]] * scale
              : round_to_dtype(widen_q[row[d]] * query_factor, dequantized) * scale;
    }
  }
  round_to_dtype_in_place(query.data(), seq_q * dim, dtype);
  const auto dequantize = [&](const std::uint16_t* row, Dtype row_dtype, float factor, float* out) {
    widen_row(row, dim, widening_table(row_dtype), out);
    if (row_dtype == dtype && factor == 1.0f) return;
    for (std::int64_t d = 0; d < dim; ++d) out[d] *= factor;
    round_to_dtype_in_place(out, dim, dequantized);
    if (dequantized != dtype) round_to_dtype_in_place(out, dim, dtype);
  };
  for (std::int64_t j = 0; j < seq_k; ++j) {
    dequantize(key_row(problem, tensors, batch, j, kv_head), problem.k_dtype(), key_factor,
               &key[j * dim]);
    dequantize(value_row(problem, tensors, batch, j, kv_head), problem.v_dtype(), value_factor,
               &value[j * dim]);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(seq_q),
              static_cast<int>(seq_k), static_cast<int>(dim), 1.0f, query.data(),
              static_cast<int>(dim), key.data(), static_cast<int>(dim), 0.0f, scores.data(),
              static_cast<int>(seq_k));
  const float softcap = static_cast<float>(problem.softcap);
  const Dtype probability_dtype = numerics.probability_dtype(problem);
  for (std::int64_t i = 0; i < seq_q; ++i) {
    float* row = &scores[i * seq_k];
    const KeyRange visible = problem.visible_keys_of(batch, i);
    const std::int64_t first = std::clamp<std::int64_t>(visible.first, 0, seq_k);
    const std::int64_t end = std::clamp<std::int64_t>(visible.end, first, seq_k);
    // Each step in the dtype, as a framework's unfused ops: the scores, their soft cap, the
    // ALiBi bias added.
    round_to_dtype_in_place(row + first, end - first, dtype);
    for (std::int64_t j = first; j < end; ++j) {
      if (problem.softcap > 0.0) {
        const float capped = round_to_dtype(std::tanh(row[j] / softcap), dtype);
        if (keep_capped_tanh) plain.capped_tanh[static_cast<std::size_t>(i * seq_k + j)] = capped;
        row[j] = round_to_dtype(softcap * capped, dtype);
      }
      if (problem.alibi) {
        row[j] = round_to_dtype(row[j] + static_cast<float>(problem.score_bias(batch, head, i, j)),
                                dtype);
      }
    }
    float row_max = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = first; j < end; ++j) row_max = std::max(row_max, row[j]);
    float row_sum = 0.0f;
    for (std::int64_t j = first; j < end; ++j) {
      row[j] = std::exp(row[j] - row_max);
      row_sum += row[j];
    }
    if (probability_dtype == dtype) {
      for (std::int64_t j = first; j < end; ++j) row[j] /= row_sum;
      round_to_dtype_in_place(row + first, end - first, dtype);
    } else {
      for (std::int64_t j = first; j < end; ++j) {
        row[j] = round_to_dtype(row[j], probability_dtype) / row_sum;
      }
    }
    std::fill(row, row + first, 0.0f);
    std::fill(row + end, row + seq_k, 0.0f);
  }
  return plain;
}

std::vector<float> plain_attention(const AttentionProblem& problem, const AttentionTensors& tensors,
                                   int threads, const DeclaredNumerics& numerics) {
  const std::int64_t dim = problem.head_dim;
  const Dtype dtype = problem.dtype;
  // Rows past a sequence's end (varlen) stay 0, as the reference's do.
  std::vector<float> output(
      static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q * dim), 0.0f);
  use_single_threaded_blas();

  parallel_for(
      problem.batch * problem.heads,
      [&](std::int64_t item) {
        const std::int64_t head = item % problem.heads;
        const std::int64_t batch = item / problem.heads;
        float* out = &output[static_cast<std::size_t>(item * problem.seq_len_q * dim)];
        // Rows that see no key have P = 0 and stay 0; so does a sequence without queries or keys.
        const PlainHead plain = plain_head(problem, tensors, batch, head, false, numerics);
        if (plain.seq_q == 0 || plain.seq_k == 0) return;
        const std::int64_t seq_q = plain.seq_q, seq_k = plain.seq_k;
        const std::vector<float>& scores = plain.probabilities;
        const std::vector<float>& value = plain.value;
        if (const std::optional<Dtype> accumulator = numerics.accumulator_for(dtype)) {
          accumulate_as_declared(scores.data(), value.data(), seq_q, seq_k, dim, numerics,
                                 *accumulator, out);
          round_to_dtype_in_place(out, seq_q * dim, dtype);
          return;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(seq_q),
                    static_cast<int>(dim), static_cast<int>(seq_k), 1.0f, scores.data(),
                    static_cast<int>(seq_k), value.data(), static_cast<int>(dim), 0.0f, out,
                    static_cast<int>(dim));
        round_to_dtype_in_place(out, seq_q * dim, dtype);
      },
      threads);
  return output;
}

}  // namespace attnfuzz
