// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash's backward pass: a CPU twin of FlashAttention-2's backward algorithm.
#pragma once

#include "core/attention_problem.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

// Computes dQ, dK and dV of `problem` (not paged) into `gradients` from the inputs, the forward's
// O and log-sum-exp (tensors.o, tensors.lse) and dO, with the backward plant `plant`
// (ATTNFUZZ_BACKWARD_PLANTED_BUGS; any other changes nothing here). Throws std::runtime_error
// for a paged problem or a missing log-sum-exp.
void cpu_flash_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                        const BackwardTensors& gradients, PlantedBug plant = PlantedBug::none);

}  // namespace attnfuzz
