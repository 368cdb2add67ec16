// SPDX-License-Identifier: BSD-3-Clause
// One case's backward pass on a kernel, judged: dO drawn from the case's distribution, the kernel
// handed its own copies of the inputs, and O and the log-sum-exp of the float64 forward rounded
// (to the dtype, to fp32) as docs/tolerance.md's backward bound assumes; its dQ, dK and dV, written
// into buffers that start poisoned (an element left unwritten is not finite), against the float64
// gradients.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "kernels/attention_kernel.h"
#include "oracle/backward_comparison.h"
#include "oracle/plain_backward.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"

namespace attnfuzz {

// dO of a case: Q's draw from the case's distribution under this other seed, placed where O's rows
// lie, so that it has the data's scale and both signs.
inline constexpr std::uint64_t kGradOutputSeed = 0x9e3779b97f4a7c15ull;

// The problem a backward of the case is handed: the case's, with the log-sum-exp (which the
// backward reads) returned.
AttentionProblem backward_problem_of(AttentionCase attention_case);

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
  // FlashAttention's yardstick: the plain same-precision backward's (empty when not asked for).
  PlainGradients plain;

  explicit BackwardCase(const AttentionCase& attention_case, bool with_plain_backward = true);
  // The same from given tensors (a metamorphic property hands a kernel two related cases): the
  // problem (a backward_problem_of), its inputs and dO as given; O, the log-sum-exp and the
  // gradients from their float64 forward and backward; the plain backward only when
  // `with_plain_backward` (the comparison's yardstick, which a relation between runs does not
  // read).
  BackwardCase(const AttentionProblem& problem, AttentionInputs inputs,
               std::vector<std::uint16_t> grad_output, bool with_plain_backward = true);
  // The original inputs and index arrays, O and the log-sum-exp.
  AttentionTensors tensors() const;
};

// Where row `row` of head `head` of a gradient laid out as its input starts (dQ as Q: query heads
// and rows; dK as K and dV as V: kv heads and key rows), from element [0, 0, 0, 0].
std::int64_t gradient_row_offset(const AttentionProblem& problem, GradientTensor tensor,
                                 std::int64_t b, std::int64_t head, std::int64_t row);

// One run of `kernel`'s backward on a prepared case (the caller has checked backward_support):
// dQ, dK and dV laid out as Q, K and V (each its input's span from element [0, 0, 0, 0]), or the
// first fault: the kernel's error, an input it changed, a write outside the gradients' rows.
struct BackwardGradients {
  std::string fault;
  std::vector<std::uint16_t> dq, dk, dv;
  const std::vector<std::uint16_t>& of(GradientTensor tensor) const {
    return tensor == GradientTensor::dq ? dq : tensor == GradientTensor::dk ? dk : dv;
  }
};
BackwardGradients backward_gradients(const AttentionKernel& kernel,
                                     const BackwardCase& backward_case, PlantedBug plant,
                                     bool deterministic);

struct BackwardCheck {
  std::string error;  // the kernel's, when it threw; then nothing was compared
  GradientComparison comparison;
  // Faults beside the comparison, each one line: an input it was handed changed (Q, K, V and
  // their index arrays, O, the log-sum-exp, dO); a write outside dQ, dK and dV's elements (their
  // guard margins and row padding); a later run that failed, wrote astray or (unless
  // nondeterminism is allowed) differed in a bit from the first.
  std::optional<std::string> changed_input;
  std::optional<std::string> stray_write;
  std::optional<std::string> repeat_fault;
};

// Runs `kernel`'s backward on the case (the caller has checked backward_support) with `plant`,
// `repeats` times on the same inputs, each into fresh poisoned gradients. From the second run on,
// every run must write the first one's bits, or with `allow_nondeterminism` (or a kernel whose
// backward declares itself nondeterministic) is judged against the oracle on its own (the
// comparison reported is then the worst run's by its bound ratio, FlashAttention's rule ratio
// included).
BackwardCheck check_backward(const AttentionKernel& kernel, const AttentionCase& attention_case,
                             PlantedBug plant, int repeats = 1, bool allow_nondeterminism = false);

}  // namespace attnfuzz
