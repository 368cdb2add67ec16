// SPDX-License-Identifier: BSD-3-Clause
// A plain attention in the input precision, as a framework computes it without a fused kernel:
// Q*scale and S = QK^T rounded to the dtype (fp32 accumulation), softmax in fp32 rounded to the
// dtype, O = PV rounded to the dtype. Its error against the float64 reference is the yardstick of
// FlashAttention's own test rule: a fused kernel may be at most twice as wrong as this.
#pragma once

#include <cstdint>
#include <vector>

#include "core/attention_problem.h"
#include "oracle/declared_numerics.h"

namespace attnfuzz {

// One head of one sequence as the plain attention computes it up to P (row-major): Q * scale
// rounded, K and V widened, P rounded to the dtype (0 where masked), and, when soft-capped and
// `keep_capped_tanh` (a plain backward's softcap slope needs it), the rounded tanh(s / softcap) of
// each score. Empty when the sequence has no queries or no keys. Where `numerics` declares P in
// another dtype, each unnormalised exp(s - max) is rounded to it and then divided by the fp32 row
// sum, as a fused kernel with those numerics does (FlashAttention 3's fp8 path).
struct PlainHead {
  std::int64_t seq_q = 0, seq_k = 0;
  std::vector<float> query, key, value, probabilities, capped_tanh;
};
PlainHead plain_head(const AttentionProblem& problem, const AttentionTensors& tensors,
                     std::int64_t batch, std::int64_t head, bool keep_capped_tanh = false,
                     const DeclaredNumerics& numerics = {});

// Compact [batch][heads][seq_len_q][head_dim] output, already rounded to the dtype. Under a
// declared accumulation (`numerics`), P V is summed in that dtype, rounded once per block of keys,
// as the kernel's own accumulator is, and P rounded to a declared P dtype (plain_head):
// FlashAttention's rule then compares like with like.
std::vector<float> plain_attention(const AttentionProblem& problem, const AttentionTensors& tensors,
                                   int threads = 0, const DeclaredNumerics& numerics = {});

}  // namespace attnfuzz
