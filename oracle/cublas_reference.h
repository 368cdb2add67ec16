// SPDX-License-Identifier: BSD-3-Clause
// The float64 reference on a CUDA device, for shapes too large for the CPU oracle. Same result as
// reference_attention() (same fields, same meaning) to about 1e-12 relative:
//   the inputs are widened exactly to double, then per (batch, kv head), batched over a chunk
//   that fits the device's free memory:
//     S = scale * Q_group K^T          cublasDgemmStridedBatched (the group's query heads stacked)
//     masked, max-subtracted softmax    in double, one block per row
//     [O | A] = P [V | |V|]             cublasDgemmStridedBatched
// Numerics are locked: CUBLAS_PEDANTIC_MATH (no TF32, no reduced-precision shortcuts), FP64 only.
#pragma once

#include <string>

#include "core/attention_problem.h"
#include "oracle/reference_attention.h"

namespace attnfuzz {

// `tensors` are the host inputs (q, k, v; o is not read). Throws std::runtime_error when the
// build has no CUDA, no device is usable, or a CUDA or cuBLAS call fails.
ReferenceAttention cublas_reference_attention(const AttentionProblem& problem,
                                              const AttentionTensors& tensors);

// For reports: the cuBLAS version and the math mode in force, e.g.
// "cuBLAS 13.0.0, CUBLAS_PEDANTIC_MATH, float64 DGEMM"; or, never throwing, why it is unavailable.
std::string cublas_description();

// The cuBLAS library this build links, e.g. "cuBLAS 13.0.0" (no device needed), or why there is
// none.
std::string cublas_library_version();

}  // namespace attnfuzz
