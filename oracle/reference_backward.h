// SPDX-License-Identifier: BSD-3-Clause
// The float64 oracle of the backward pass: the gradients of sum(dO * O) with respect to Q, K and V,
// computed in double precision from the exact fp16/bf16 values of Q, K, V and dO, with BLAS for
// every matrix product, plus the data-dependent scales a tolerance on them needs.
//
// With s = scale * Q K^T, t = softcap * tanh(s / softcap) when soft-capped (else s), plus the
// ALiBi bias, masked, and P = softmax(t) row by row:
//   O  = P V                      D_i  = sum_d dO_id O_id (from the exact O)
//   dV = P^T dO                   dP   = dO V^T
//   dS = P * (dP - D) * t'(s)     t'   = 1 - tanh^2(s / softcap), or 1
//   dQ = scale dS K               dK   = scale dS^T Q
// A kv head's dK and dV sum the contributions of every query head of its group. A row that sees
// no key has P = 0 and adds nothing; its dQ row is 0.
#pragma once

#include <cstdint>

#include "core/attention_problem.h"
#include "core/large_buffer.h"

namespace attnfuzz {

struct ReferenceGradients {
  // Compact [batch][heads][seq_len_q][head_dim]; rows past a sequence's end hold 0:
  LargeBuffer<double> dq;
  // scale * sum_j w_ij |K_jd|, with w_ij = P_ij (|dP_ij| + |D_i| + gradient_scale_i): the scale
  // of the errors dQ inherits from an inexact P, dP or D (dS's cancellation, dP - D, is why the
  // terms are bounded one by one rather than by |dS|).
  LargeBuffer<double> dq_magnitude;
  // Compact [batch][kv_heads][seq_len_k][head_dim], each summed over its group's query heads;
  // rows past a sequence's keys hold 0:
  LargeBuffer<double> dk;
  LargeBuffer<double> dv;
  LargeBuffer<double> dk_magnitude;  // scale * sum_i w_ij |Q_id|
  LargeBuffer<double> dv_magnitude;  // sum_i P_ij |dO_id|
  // Compact [batch][kv_heads][head_dim]: the column sums of |K| over the sequence's keys, and of
  // |Q| and |dO| over the rows of every query head of the group (what roundings below the dtype's
  // normal range, an absolute error each, add up to).
  LargeBuffer<double> key_abs_sum;
  LargeBuffer<double> query_abs_sum;
  LargeBuffer<double> grad_output_abs_sum;
  // Compact [batch][heads][seq_len_q]:
  LargeBuffer<double> output_dot;  // D_i; 0 for a row that sees no key
  // G_i = |dO_i|_2 * max_j |V_j|_2, which bounds both |dP_ij| and |D_i| (O_i is a convex
  // combination of the V_j): the scale of their fp32 accumulation errors; plus (eta / u) times
  // sum_d |dO_id|, so that u G_i also covers D's error from an O rounded below the dtype's
  // normal range (u |O_id| + eta each).
  LargeBuffer<double> gradient_scale;
  // max_j w_ij: how large the row's dS (and what it is computed from) may be, which must stay
  // within what the dtype and fp32 hold for a kernel's arithmetic to mean anything.
  LargeBuffer<double> largest_weight;
};

// Computes the gradients for the problem's inputs (q, k, v of `tensors`; o is not read) and the
// output gradient `grad_output`, laid out as O (problem.o_strides, packed when varlen), into
// `gradients`, resizing its arrays and writing every element. Work is split by (batch, kv head),
// and each kv head into parts when there are fewer than twice as many as threads (their sums
// added in a fixed order: the same bits on every run); uses all threads of the machine,
// `threads` overrides.
void reference_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                        const std::uint16_t* grad_output, ReferenceGradients& gradients,
                        int threads = 0);
ReferenceGradients reference_backward(const AttentionProblem& problem,
                                      const AttentionTensors& tensors,
                                      const std::uint16_t* grad_output, int threads = 0);

}  // namespace attnfuzz
