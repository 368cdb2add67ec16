// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/plain_backward.h"

#include <cblas.h>

#include <atomic>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "oracle/plain_attention.h"
#include "oracle/single_threaded_blas.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

// C (m x n) = op(A) op(B), each row-major, fp32 accumulation.
void product(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
             const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(transpose_a ? m : k), b,
              static_cast<int>(transpose_b ? k : n), 0.0f, c, static_cast<int>(n));
}

}  // namespace

PlainGradients plain_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                              const std::uint16_t* grad_output, int threads) {
  const std::int64_t dim = problem.head_dim;
  const Dtype dtype = problem.dtype;
  PlainGradients gradients;
  gradients.dq.assign(
      static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q * dim), 0.0f);
  gradients.dk.assign(
      static_cast<std::size_t>(problem.batch * problem.kv_heads * problem.seq_len_k * dim), 0.0f);
  gradients.dv.assign(gradients.dk.size(), 0.0f);
  const std::span<const float> widen = widening_table(dtype);
  const float scale = static_cast<float>(problem.softmax_scale);
  const float softcap = static_cast<float>(problem.softcap);
  use_single_threaded_blas();
  std::atomic<bool> any_saturated{false};

  parallel_for(
      problem.batch * problem.kv_heads,
      [&](std::int64_t item) {
        const std::int64_t kv_head = item % problem.kv_heads;
        const std::int64_t batch = item / problem.kv_heads;
        const std::int64_t key_rows = problem.seq_len_k_of(batch);
        bool saturated = false;
        // The group's sums, in fp32 (rows past the sequence's keys stay 0).
        float* dk_sum = &gradients.dk[static_cast<std::size_t>(item * problem.seq_len_k * dim)];
        float* dv_sum = &gradients.dv[static_cast<std::size_t>(item * problem.seq_len_k * dim)];
        for (std::int64_t head = kv_head * problem.group_size();
             head < (kv_head + 1) * problem.group_size(); ++head) {
          const PlainHead plain = plain_head(problem, tensors, batch, head, true);
          const std::int64_t seq_q = plain.seq_q, seq_k = plain.seq_k;
          if (seq_q == 0 || seq_k == 0) continue;  // nothing flows back; dQ rows stay 0
          std::vector<float> grad_out(static_cast<std::size_t>(seq_q * dim));
          for (std::int64_t i = 0; i < seq_q; ++i) {
            widen_row(output_row(problem, grad_output, batch, i, head), dim, widen,
                      &grad_out[i * dim]);
          }
          const std::vector<float>& probabilities = plain.probabilities;
          // dV's part: P^T dO.
          std::vector<float> part(static_cast<std::size_t>(seq_k * dim));
          product(true, false, seq_k, dim, seq_q, probabilities.data(), grad_out.data(),
                  part.data());
          round_to_dtype_in_place(part.data(), seq_k * dim, dtype);
          for (std::int64_t e = 0; e < seq_k * dim; ++e) dv_sum[e] += part[e];
          // dP = dO V^T, then softmax's backward: dS = P * (dP - rowsum(dP * P)).
          std::vector<float> dscores(static_cast<std::size_t>(seq_q * seq_k));
          product(false, true, seq_q, seq_k, dim, grad_out.data(), plain.value.data(),
                  dscores.data());
          round_to_dtype_in_place(dscores.data(), seq_q * seq_k, dtype);
          for (std::int64_t i = 0; i < seq_q; ++i) {
            float* row = &dscores[i * seq_k];
            const float* p = &probabilities[i * seq_k];
            float rowsum = 0.0f;
            for (std::int64_t j = 0; j < seq_k; ++j) rowsum += row[j] * p[j];
            for (std::int64_t j = 0; j < seq_k; ++j) {
              row[j] = round_to_dtype(p[j] * (row[j] - rowsum), dtype);
              if (problem.softcap > 0.0) {
                const float y = plain.capped_tanh[static_cast<std::size_t>(i * seq_k + j)];
                if (y * y == 1.0f && p[j] != 0.0f) saturated = true;
                const float dy = round_to_dtype(row[j] * softcap, dtype);
                const float dx = round_to_dtype(dy * (1.0f - y * y), dtype);
                row[j] = round_to_dtype(dx / softcap, dtype);
              }
            }
          }
          // dQ = (dS K) * scale, each rounded.
          std::vector<float> dq_scaled(static_cast<std::size_t>(seq_q * dim));
          product(false, false, seq_q, dim, seq_k, dscores.data(), plain.key.data(),
                  dq_scaled.data());
          round_to_dtype_in_place(dq_scaled.data(), seq_q * dim, dtype);
          float* dq = &gradients.dq[static_cast<std::size_t>(
              ((batch * problem.heads + head) * problem.seq_len_q) * dim)];
          for (std::int64_t e = 0; e < seq_q * dim; ++e) {
            dq[e] = round_to_dtype(dq_scaled[e] * scale, dtype);
          }
          // dK's part: dS^T Qs.
          product(true, false, seq_k, dim, seq_q, dscores.data(), plain.query.data(), part.data());
          round_to_dtype_in_place(part.data(), seq_k * dim, dtype);
          for (std::int64_t e = 0; e < seq_k * dim; ++e) dk_sum[e] += part[e];
        }
        if (saturated) any_saturated.store(true, std::memory_order_relaxed);
        round_to_dtype_in_place(dk_sum, key_rows * dim, dtype);
        round_to_dtype_in_place(dv_sum, key_rows * dim, dtype);
      },
      threads);
  gradients.softcap_saturated = any_saturated.load();
  return gradients;
}

}  // namespace attnfuzz
