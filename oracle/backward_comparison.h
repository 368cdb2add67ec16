// SPDX-License-Identifier: BSD-3-Clause
// A kernel's dQ, dK and dV against the float64 gradients under the backward bound
// (oracle/backward_tolerance.h): every element that exists judged, the first failing one named;
// and, as a figure, each gradient's ratio under FlashAttention's rule against a plain
// same-precision backward (oracle/plain_backward.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/attention_problem.h"
#include "oracle/backward_tolerance.h"
#include "oracle/plain_backward.h"

namespace attnfuzz {

struct GradientElementReport {
  GradientTensor tensor = GradientTensor::dq;
  // (batch, head, row, dim): the query head and row for dQ, the kv head and key row for dK and dV.
  std::int64_t batch = 0, head = 0, row = 0, dim = 0;
  double expected = 0.0, actual = 0.0, allowed = 0.0;
};

struct GradientComparison {
  bool passed = false;        // every element judged and within its bound
  bool failed = false;        // some element beyond its bound, or not finite where it must be
  bool inconclusive = false;  // neither: the bound means nothing for this case (why: reason)
  std::string reason;         // empty when passed; else one line
  std::int64_t elements = 0;
  std::int64_t failing_elements = 0;
  double bound_ratio = 0.0;                   // the largest |error| / allowed
  double max_abs_error[3] = {0.0, 0.0, 0.0};  // per GradientTensor
  // FlashAttention's rule, per gradient: max|error| / (2 * the plain backward's max|error| + u *
  // max|oracle|); the largest of the three (0 without a plain backward, or where it saturated).
  // Reported, not judged: a correct FlashAttention-2 backward exceeds 1 on peaked rows
  // (docs/tolerance.md, "The backward pass").
  double fa_rule_ratio = 0.0;
  std::optional<GradientElementReport> first_failure;  // dQ, then dK, then dV, each in order
  GradientElementReport worst_element;                 // the largest |error| / allowed
};

// `dq` is laid out as Q (problem.q_strides, packed when varlen), `dk` as K and `dv` as V; rows
// past a sequence's end are not read. `forward` and `gradients` are the float64 oracles' for the
// same inputs and dO; `plain`, when given, the plain backward's, for FlashAttention's rule.
GradientComparison compare_gradients(const AttentionProblem& problem,
                                     const ReferenceAttention& forward,
                                     const ReferenceGradients& gradients, const std::uint16_t* dq,
                                     const std::uint16_t* dk, const std::uint16_t* dv,
                                     const PlainGradients* plain = nullptr);

}  // namespace attnfuzz
