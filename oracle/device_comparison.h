// SPDX-License-Identifier: BSD-3-Clause
// The comparison on a CUDA device: check_row() (oracle/row_check.h) in one thread per query row,
// over the reference, the plain reference and the kernel's output in device memory, then the rows'
// checks summarised there (oracle/rows_summary.h: runs of rows, merged in their order); only the
// summary and the checks of the rows it names come back, and comparison_of_summary()
// (oracle/tolerance.h) concludes on the host with the CPU comparison's code. The same first failing
// and worst elements, counts and maxima as compare_to_reference() for the same arrays; its sums
// (the mean error, the correlation's moments, the bias test's) are added in another order, and
// the library's expm1 and log, in each row's bound, may differ from the host's in their last bit,
// so a figure made of sums may differ in its last bits (and a verdict only where the bias test sits
// on its limit to that precision). The per-row arithmetic is one source, compiled without
// contraction into fused multiply-adds.
#pragma once

#include <cstdint>
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

// The comparison of a kernel's output on the device: `output`: the kernel's output on the device,
// element [0,0,0,0], laid out by problem.o_strides; `plain`: the plain reference on the device
// (compact; null: none); `max_abs_expected`: the largest |O| of the reference. Throws
// std::invalid_argument for a problem the device comparison does not take.
Comparison compare_rows_on_device(const AttentionProblem& problem,
                                  const DeviceReferenceView& reference, const std::uint16_t* output,
                                  const float* plain, double max_abs_expected,
                                  const DeclaredNumerics& numerics = {});

// compare_to_reference() with the rows checked on the device: the host arrays are copied there
// first. `output_elements`: the length of the output buffer from `output` on (the kernel's
// output with its guard). Throws std::runtime_error without a usable device or CUDA in the
// build, std::invalid_argument for a problem the device comparison does not take.
Comparison compare_on_device(const AttentionProblem& problem, const ReferenceAttention& reference,
                             const std::vector<float>& plain, const std::uint16_t* output,
                             std::size_t output_elements, const DeclaredNumerics& numerics = {});

}  // namespace attnfuzz
