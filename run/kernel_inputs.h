// SPDX-License-Identifier: BSD-3-Clause
// Inputs are evidence, not scratch space. A kernel is handed its own copies of the inputs (Q, K and
// V, or the page pool, with their guard tails) and of the problem's index arrays (cu_seqlens_q/k,
// the block table, the ALiBi slopes); the harness keeps the originals, and the oracle and the row
// counts read those. After each call the copies must still equal the originals bit for bit: a
// kernel that scales Q in place (RoPE), appends to its KV cache, uses an input as a workspace or
// writes past an input's end into its guard tail fails with the first element it changed, and its
// output is still judged against what the inputs were. Each copy lies between inaccessible pages
// (core/fenced_buffer.h): a write, or a read, past its guard tail faults, naming the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "case/data_distribution.h"
#include "core/attention_problem.h"
#include "core/fenced_buffer.h"

namespace attnfuzz {

struct KernelInputs {
  FencedBuffer<std::uint16_t> q, k, v;  // with their guard tails
  FencedBuffer<std::int32_t> cu_seqlens_q, cu_seqlens_k, block_table;
  FencedBuffer<float> alibi_slopes;
  FencedBuffer<float> q_descale, k_descale, v_descale;  // empty where the tensor has none

  // Copies of `inputs` (their descale factors included) and of `problem`'s index arrays.
  static KernelInputs copy_of(const AttentionProblem& problem, const AttentionInputs& inputs);

  // Q, K, V, the output and the log-sum-exp buffer, with these copies' index arrays and descale
  // factors (null where the problem has none).
  AttentionTensors bind(std::uint16_t* output, float* lse) const;
};

// What one call of a kernel did besides its output: its error text (empty on success), when it
// changed an input it was handed, the first change (find_changed_input), and the time its copies
// between host and device took.
struct KernelCall {
  std::string error;
  std::optional<std::string> changed_input;
  double transfer_seconds = 0.0;  // copying between host and device memory, for a device kernel
};

// One line naming the first input of `handed` that no longer equals the original (the tensors in
// the order Q, K, V, then the index arrays), its first changed element and what it held before and
// after; nothing when the kernel left every input as it was.
std::optional<std::string> find_changed_input(const AttentionProblem& problem,
                                              const AttentionInputs& original,
                                              const KernelInputs& handed);

}  // namespace attnfuzz
