// SPDX-License-Identifier: BSD-3-Clause
// A plain backward pass in the input precision, as a framework's autograd computes it through the
// unfused plain attention (oracle/plain_attention.h): every product with fp32 accumulation rounded
// to the dtype, softmax's backward in fp32 from the rounded P, rounded. Its error against the
// float64 gradients is the yardstick of FlashAttention's rule for the backward: a fused kernel's
// dQ, dK and dV may be at most twice as wrong as these.
//
// Per head, after the plain forward's Qs = Q * scale, S, P (rounded each):
//   dV = P^T dO        dP = dO V^T        dS = P * (dP - rowsum(dP * P))
//   soft-capped: dS through t = softcap * y, y = tanh(s / softcap): dS * softcap, * (1 - y^2),
//   / softcap, each rounded
//   dQ = (dS K) * scale                   dK = dS^T Qs
// A GQA group's dK and dV add its heads' (each rounded) in fp32, rounded once: autograd's sum over
// the repeated kv head.
#pragma once

#include <cstdint>
#include <vector>

#include "core/attention_problem.h"

namespace attnfuzz {

// Compact as ReferenceGradients' (oracle/reference_backward.h), every value in the dtype.
struct PlainGradients {
  std::vector<float> dq;  // [batch][heads][seq_len_q][head_dim]
  std::vector<float> dk;  // [batch][kv_heads][seq_len_k][head_dim]
  std::vector<float> dv;
  // Some soft-capped score's tanh rounded to +-1 in the dtype, so that its slope 1 - y^2 is 0:
  // the plain backward then drops that score's whole term, and its error measures the term, not
  // the roundings FlashAttention's rule compares (a kernel computing the slope in fp32 keeps it).
  bool softcap_saturated = false;
};

// The plain gradients for the problem's inputs (q, k, v of `tensors`) and `grad_output`, laid out
// as O. Work is split by (batch, kv head); `threads` as plain_attention's.
PlainGradients plain_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                              const std::uint16_t* grad_output, int threads = 0);

}  // namespace attnfuzz
