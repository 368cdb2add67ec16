// SPDX-License-Identifier: BSD-3-Clause
// The float64 reference: attention computed in double precision from the exact fp16/bf16 input
// values, with BLAS for both matrix products, plus the data-dependent scales that the tolerance
// needs (how large the terms are that each output element sums).
#pragma once

#include <cstdint>
#include <string>

#include "core/attention_problem.h"
#include "core/large_buffer.h"
#include "oracle/declared_numerics.h"

namespace attnfuzz {

struct ReferenceAttention {
  // Compact [batch][heads][seq_len_q][head_dim]:
  LargeBuffer<double> output;  // O_id = sum_j p_ij V_jd (p = softmax probabilities)
  // An upper bound on A_id = sum_j p_ij |V_jd|, the scale of P's rounding errors, within a factor
  // magnitude_excess(seq_len_k) of it (computed in float: it only scales the tolerance).
  LargeBuffer<double> magnitude;
  // Compact [batch][heads][seq_len_q]:
  LargeBuffer<double> inverse_row_sum;  // 1 / sum_j exp(s_ij - max_j s_ij); 0 for masked rows
  LargeBuffer<double> score_scale;      // scale * |Q_i|_2 * max_j |K_j|_2, bounds |s_ij|
  LargeBuffer<double> bias_scale;       // the largest |ALiBi bias| row i sees; 0 without ALiBi
  LargeBuffer<double> log_sum_exp;      // log sum_j exp(s_ij), natural log; -inf: no key seen
  // Rows past a sequence's end (varlen) hold 0 output and are never compared.
  // Compact [batch][kv_heads][head_dim]:
  LargeBuffer<double> value_abs_sum;  // sum_j |V_jd|
};

// Gives every array of `reference` its size for `problem`, its elements left as they are: an
// oracle writes every one (the CPU oracle here, the cuBLAS one in cublas_reference.cu).
void size_reference(const AttentionProblem& problem, ReferenceAttention& reference);

// Computes the reference for the problem's inputs (q, k, v of `tensors`; o is not read) into
// `reference`, resizing its arrays and writing every element: a caller may reuse one
// ReferenceAttention from case to case. Uses all threads of the machine; `threads` overrides.
void reference_attention(const AttentionProblem& problem, const AttentionTensors& tensors,
                         ReferenceAttention& reference, int threads = 0);
ReferenceAttention reference_attention(const AttentionProblem& problem,
                                       const AttentionTensors& tensors, int threads = 0);

// Under a kernel's declared dequantization of fp8 inputs into a 16-bit dtype (--dequantize-to), the
// score scales of `reference` recomputed on norms of fp8 Q and K rows padded for its rounding
// (DeclaredNumerics::dequantization_norm_padding); nothing changes otherwise.
void pad_score_scales(const AttentionProblem& problem, const AttentionTensors& tensors,
                      const DeclaredNumerics& numerics, ReferenceAttention& reference);

// How far `magnitude` may exceed A (docs/tolerance.md): A_id <= magnitude_id <=
// magnitude_excess(seq_len_k) * A_id + magnitude_underflow_slack(sum_j |V_jd|, seq_len_k).
// The excess is about 1 + 2 (min(seq_len_k, 4096) + 1) 2^-24 (at most 1.0005); the slack, float's
// underflow, is below 1e-40 of the values' scale.
double magnitude_excess(std::int64_t seq_len_k);
double magnitude_underflow_slack(double value_abs_sum, std::int64_t seq_len_k);

}  // namespace attnfuzz

namespace attnfuzz {

// The BLAS behind the oracle, for reports: "OpenBLAS 0.3.21 DYNAMIC_ARCH ...".
std::string blas_description();

}  // namespace attnfuzz
