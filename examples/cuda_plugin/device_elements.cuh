// SPDX-License-Identifier: BSD-3-Clause
// What both CUDA example plugins compute with: 16-bit elements widened to fp32 and rounded back
// (round to nearest even), and a block-wide reduction.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "attnfuzz/attnfuzz_plugin.h"

__device__ inline float load_element(uint16_t bits, int32_t dtype) {
  return dtype == ATTNFUZZ_DTYPE_FP16 ? __half2float(__ushort_as_half(bits))
                                      : __bfloat162float(__ushort_as_bfloat16(bits));
}

__device__ inline uint16_t store_element(float value, int32_t dtype) {
  return dtype == ATTNFUZZ_DTYPE_FP16 ? __half_as_ushort(__float2half_rn(value))
                                      : __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// Every thread of a block of kThreads gets the block's maximum (or sum) of `value`.
template <int kThreads>
__device__ float block_reduce(float value, bool maximum) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xFFFFFFFFu, value, offset);
    value = maximum ? fmaxf(value, other) : value + other;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  float total = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    total = maximum ? fmaxf(total, partial[w]) : total + partial[w];
  }
  __syncthreads();
  return total;
}
