// SPDX-License-Identifier: BSD-3-Clause
// cuda_flash's backward pass: the CUDA twin of cpu_flash_backward (kernels/cpu_flash_backward.h).
#pragma once

#include <optional>
#include <string>

#include "core/attention_problem.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

// Why cuda_flash's backward cannot run `problem` where its forward can (paged K/V, a grid too
// large), or nothing.
std::optional<std::string> cuda_flash_backward_unsupported(const AttentionProblem& problem);

// Computes dQ, dK and dV of `problem` on the current CUDA device: `tensors` and `gradients` hold
// device pointers (the index arrays too), the forward's O and log-sum-exp among them. With
// gradients.deterministic dQ is summed over the keys in order; without, the key tiles add their
// parts to it atomically, in whatever order they finish (FlashAttention-2's dQ). `plant` is one of
// ATTNFUZZ_BACKWARD_PLANTED_BUGS, at the place the twin has it (any other changes nothing). Throws
// std::runtime_error where cuda_flash_backward_unsupported names a reason, for a head dim without
// tiles, a missing log-sum-exp, or a CUDA error.
void cuda_flash_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                         const BackwardTensors& gradients, PlantedBug plant);

}  // namespace attnfuzz
