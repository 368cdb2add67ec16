// SPDX-License-Identifier: BSD-3-Clause
// The float64 reference on a CUDA device. Same result as reference_attention() (same fields, same
// meaning) to about 1e-12 relative:
//   the inputs, in device memory, are widened exactly to double on the device (with the
//   tolerance's data scales, summed as the CPU sums them), then per (batch, kv head), batched
//   over a chunk that fits the device's free memory:
//     S = scale * Q_group K^T          cublasDgemmStridedBatched (the group's query heads stacked)
//     masked, max-subtracted softmax    in double, one block per row
//     [O | A] = P [V | |V|]             cublasDgemmStridedBatched
// Numerics are locked: CUBLAS_PEDANTIC_MATH (no TF32, no reduced-precision shortcuts), FP64 only.
#pragma once

#include <string>

#include "core/attention_problem.h"
#include "core/problem_features.h"
#include "oracle/device_comparison.h"
#include "oracle/reference_attention.h"

#if ATTNFUZZ_HAVE_CUDA
#include "core/device_array.h"
#endif

namespace attnfuzz {

// Whether this oracle computes `problem`: dense attention (causal or not, any layout, GQA), no
// variant (core/problem_features.h).
inline bool cublas_reference_supports(const AttentionProblem& problem) {
  return features_of(problem) == 0;
}

// `tensors` are the host inputs (q, k, v; o is not read): copied to the device, the reference
// computed there (cublas_reference_on_device) and copied back. Throws std::runtime_error when the
// build has no CUDA, no device is usable, or a CUDA or cuBLAS call fails; std::invalid_argument
// for a problem it does not compute.
ReferenceAttention cublas_reference_attention(const AttentionProblem& problem,
                                              const AttentionTensors& tensors);

#if ATTNFUZZ_HAVE_CUDA
// Q, K and V in device memory, element [0,0,0,0] of each, laid out by the problem's strides.
struct DeviceInputTensors {
  const std::uint16_t* q;
  const std::uint16_t* k;
  const std::uint16_t* v;
};

// The arrays of a reference in device memory, as ReferenceAttention's, for the stages that write
// them.
struct DeviceReferenceArrays {
  double *output, *magnitude, *inverse_row_sum, *score_scale, *bias_scale, *log_sum_exp,
      *value_abs_sum;
};

// The oracle's scratch arrays, kept from case to case up to kKeptScratchBytes each.
struct DeviceReferenceWorkspace {
  DeviceBuffer<double> query, key, value, scores, result, inverse, log_sum_exp, max_key_norm;
  DeviceBuffer<unsigned long long> largest;
};

// What one scratch array of the device's references keeps after a case: a large case's scores
// (gigabytes) are given back, so that a worker sharing the GPU with others does not hold them.
inline constexpr std::size_t kKeptScratchBytes = std::size_t{256} << 20;

// A reference computed on the device and kept there: what the comparison on the device reads
// (oracle/device_comparison.h). One object serves case after case without reallocating.
struct DeviceReference {
  DeviceBuffer<double> output, magnitude, inverse_row_sum, score_scale, bias_scale, log_sum_exp,
      value_abs_sum;
  double max_abs_output = 0.0;  // the largest |O|
  DeviceReferenceWorkspace workspace;

  DeviceReferenceView view() const;
};

// The reference of `problem` from inputs already on the device, into `reference`. Throws as
// cublas_reference_attention() does.
void cublas_reference_on_device(const AttentionProblem& problem, const DeviceInputTensors& inputs,
                                DeviceReference& reference);
#endif

// For reports: the cuBLAS version and the math mode in force, e.g.
// "cuBLAS 13.0.0, CUBLAS_PEDANTIC_MATH, float64 DGEMM"; or, never throwing, why it is unavailable.
std::string cublas_description();

// The cuBLAS library this build links, e.g. "cuBLAS 13.0.0" (no device needed), or why there is
// none.
std::string cublas_library_version();

}  // namespace attnfuzz
