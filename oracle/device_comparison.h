// SPDX-License-Identifier: BSD-3-Clause
// The comparison on a CUDA device: check_row() (oracle/row_check.h) in one thread per query row,
// over the reference, the plain reference and the kernel's output in device memory; only the rows'
// checks come back, and comparison_of_rows() (oracle/tolerance.h) reduces them on the host in the
// CPU comparison's order with its code. Same verdict, first failing element and figures as
// compare_to_reference() for the same arrays: the per-row arithmetic is one source, compiled
// without contraction into fused multiply-adds; only the library's expm1 and log, in each row's
// bound, may differ from the host's in their last bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/attention_problem.h"
#include "core/problem_features.h"
#include "oracle/declared_numerics.h"
#include "oracle/reference_attention.h"
#include "oracle/tolerance.h"

namespace attnfuzz {

// A reference's arrays in device memory, laid out as ReferenceAttention's.
struct DeviceReferenceView {
  const double* output;
  const double* magnitude;
  const double* inverse_row_sum;
  const double* score_scale;
  const double* bias_scale;
  const double* value_abs_sum;
};

// Whether the device comparison takes this problem: every sequence as long as the longest (not
// varlen) and no log-sum-exp to check. The others are compared on the host.
inline bool device_comparison_supports(const AttentionProblem& problem) {
  return (features_of(problem) & (static_cast<std::uint32_t>(ProblemFeature::varlen) |
                                  static_cast<std::uint32_t>(ProblemFeature::return_lse))) == 0;
}

// Every query row's check, in (b, h, i) order: a view of page-locked host memory that the next
// call on this thread overwrites. `output`: the kernel's output on the device, element [0,0,0,0],
// laid out by problem.o_strides; `plain`: the plain reference on the device (compact; null:
// none); `max_abs_expected`: the largest |O| of the reference.
std::span<const RowCheck> check_rows_on_device(const AttentionProblem& problem,
                                               const DeviceReferenceView& reference,
                                               const std::uint16_t* output, const float* plain,
                                               double max_abs_expected,
                                               const DeclaredNumerics& numerics = {});

// compare_to_reference() with the rows checked on the device: the host arrays are copied there
// first. `output_elements`: the length of the output buffer from `output` on (the kernel's
// output with its guard). Throws std::runtime_error without a usable device or CUDA in the
// build, std::invalid_argument for a problem the device comparison does not take.
Comparison compare_on_device(const AttentionProblem& problem, const ReferenceAttention& reference,
                             const std::vector<float>& plain, const std::uint16_t* output,
                             std::size_t output_elements, const DeclaredNumerics& numerics = {});

}  // namespace attnfuzz
