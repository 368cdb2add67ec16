// SPDX-License-Identifier: BSD-3-Clause
// plain_attention() (oracle/plain_attention.h) on a CUDA device, for dense problems: Q * scale
// rounded to the dtype, S = Q K^T by cuBLAS SGEMM in pedantic math (fp32 products and sums, no
// TF32), S rounded to the dtype, the causal mask, softmax in fp32 (one thread per row, summing in
// key order as the CPU does) with P rounded, O = P V by SGEMM, rounded. Its steps round as the
// CPU's; its sums run in cuBLAS's order instead of OpenBLAS's, so the two agree to a rounding of
// the dtype, as two frameworks' unfused attentions do.
#pragma once

#include <vector>

#include "core/attention_problem.h"
#include "oracle/declared_numerics.h"

#if ATTNFUZZ_HAVE_CUDA
#include "core/device_array.h"
#include "oracle/cublas_reference.h"
#endif

namespace attnfuzz {

// Whether the device computes `problem`'s plain reference: dense attention under the default
// numerics (a declared accumulation sums P V in another dtype, a declared P dtype rounds P to it:
// only the CPU's does either).
bool device_plain_attention_supports(const AttentionProblem& problem,
                                     const DeclaredNumerics& numerics);

// plain_attention()'s result computed on the device from host inputs (copied there). Throws
// std::runtime_error without CUDA or a usable device, std::invalid_argument for a problem the
// device does not compute.
std::vector<float> device_plain_attention(const AttentionProblem& problem,
                                          const AttentionTensors& tensors);

#if ATTNFUZZ_HAVE_CUDA
// The plain reference in device memory (compact [batch][heads][seq_len_q][head_dim]) and its
// scratch arrays, kept from case to case.
struct DevicePlainAttention {
  DeviceBuffer<float> output;
  DeviceBuffer<float> query, key, value, scores;
};

void device_plain_attention(const AttentionProblem& problem, const DeviceInputTensors& inputs,
                            DevicePlainAttention& plain);
#endif

}  // namespace attnfuzz
