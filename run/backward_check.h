// SPDX-License-Identifier: BSD-3-Clause
// One case's backward pass on a kernel, judged: dO drawn from the case's distribution, the kernel
// handed its own copies of the inputs, and O and the log-sum-exp of the float64 forward rounded
// (to the dtype, to fp32) as docs/tolerance.md's backward bound assumes; its dQ, dK and dV, written
// into buffers that start poisoned (an element left unwritten is not finite), against the float64
// gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "kernels/attention_kernel.h"
#include "oracle/backward_comparison.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"

namespace attnfuzz {

// dO of a case: Q's draw from the case's distribution under this other seed, placed where O's rows
// lie, so that it has the data's scale and both signs.
inline constexpr std::uint64_t kGradOutputSeed = 0x9e3779b97f4a7c15ull;

// What a backward is handed for a case (its problem returns the log-sum-exp, which the backward
// reads) and the float64 results it is judged against.
struct BackwardCase {
  AttentionProblem problem;
  AttentionInputs inputs;
  std::vector<std::uint16_t> output;       // the float64 forward's O, rounded to the dtype
  std::vector<std::uint16_t> grad_output;  // dO, laid out as O
  std::vector<float> lse;                  // the float64 forward's log-sum-exp, rounded to fp32
  ReferenceAttention forward;
  ReferenceGradients gradients;

  explicit BackwardCase(const AttentionCase& attention_case);
  // The original inputs and index arrays, O and the log-sum-exp.
  AttentionTensors tensors() const;
};

struct BackwardCheck {
  std::string error;  // the kernel's, when it threw; then nothing was compared
  GradientComparison comparison;
};

// Runs `kernel`'s backward on the case (the caller has checked backward_support) with `plant`.
BackwardCheck check_backward(const AttentionKernel& kernel, const AttentionCase& attention_case,
                             PlantedBug plant);

}  // namespace attnfuzz
