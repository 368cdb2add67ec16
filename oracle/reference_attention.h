// The float64 reference: attention computed in double precision from the exact fp16/bf16 input
// values, with BLAS for both matrix products, plus the data-dependent scales that the tolerance
// needs (how large the terms are that each output element sums).
#pragma once

#include <string>
#include <vector>

#include "core/attention_problem.h"

namespace attnfuzz {

struct ReferenceAttention {
  // Compact [batch][heads][seq_len_q][head_dim]:
  std::vector<double> output;     // O_id = sum_j p_ij V_jd (p = softmax probabilities)
  std::vector<double> magnitude;  // A_id = sum_j p_ij |V_jd|, the scale of P's rounding errors
  // Compact [batch][heads][seq_len_q]:
  std::vector<double> inverse_row_sum;  // 1 / sum_j exp(s_ij - max_j s_ij); 0 for masked rows
  std::vector<double> score_scale;      // scale * |Q_i|_2 * max_j |K_j|_2, bounds |s_ij|
  // Compact [batch][kv_heads][head_dim]:
  std::vector<double> value_abs_sum;  // sum_j |V_jd|
};

// Computes the reference for the problem's inputs (q, k, v of `tensors`; o is not read). Uses all
// threads of the machine; `threads` overrides.
ReferenceAttention reference_attention(const AttentionProblem& problem,
                                       const AttentionTensors& tensors, int threads = 0);

}  // namespace attnfuzz

namespace attnfuzz {

// The BLAS behind the oracle, for reports: "OpenBLAS 0.3.21 DYNAMIC_ARCH ...".
std::string blas_description();

}  // namespace attnfuzz
