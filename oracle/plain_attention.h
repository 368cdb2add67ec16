// SPDX-License-Identifier: BSD-3-Clause
// A plain attention in the input precision, as a framework computes it without a fused kernel:
// Q*scale and S = QK^T rounded to the dtype (fp32 accumulation), softmax in fp32 rounded to the
// dtype, O = PV rounded to the dtype. Its error against the float64 reference is the yardstick of
// FlashAttention's own test rule: a fused kernel may be at most twice as wrong as this.
#pragma once

#include <vector>

#include "core/attention_problem.h"
#include "oracle/declared_numerics.h"

namespace attnfuzz {

// Compact [batch][heads][seq_len_q][head_dim] output, already rounded to the dtype. Under a
// declared accumulation (`numerics`), P V is summed in that dtype, rounded once per block of keys,
// as the kernel's own accumulator is: FlashAttention's rule then compares like with like.
std::vector<float> plain_attention(const AttentionProblem& problem, const AttentionTensors& tensors,
                                   int threads = 0, const DeclaredNumerics& numerics = {});

}  // namespace attnfuzz
