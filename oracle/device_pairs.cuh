// SPDX-License-Identifier: BSD-3-Clause
// What the device's references share besides the pairs' layout (oracle/pair_layout.h): chunks of
// pairs that fit the device's free memory, the exact widening of an fp16 or bf16 pattern, a device
// copy of host memory. The float64 oracle (cublas_reference.cu) and the plain reference
// (device_plain_attention.cu) both use them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/attention_problem.h"
#include "core/cuda_check.h"
#include "core/device_array.h"
#include "oracle/pair_layout.h"

namespace attnfuzz {

// An fp16 or bf16 pattern's value, exactly.
__device__ inline float widen_element(std::uint16_t bits, bool fp16) {
  return fp16 ? __half2float(__ushort_as_half(bits))
              : __uint_as_float(static_cast<unsigned>(bits) << 16);
}

// Pairs per chunk: as many as `pair_bytes` each fit in half the device's free memory, and never
// more than `max_chunk_bytes`, so that the next case's buffers have room. Throws naming `what`
// when not even one fits.
inline std::int64_t pairs_per_chunk(std::size_t pair_bytes, std::int64_t pairs,
                                    std::size_t max_chunk_bytes, const char* what) {
  std::size_t free_bytes = 0, total_bytes = 0;
  ATTNFUZZ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t budget = std::min(free_bytes / 2, max_chunk_bytes);
  if (pair_bytes > budget) {
    throw std::runtime_error(std::string(what) + ": one (batch, kv head) needs " +
                             std::to_string(pair_bytes >> 20) + " MiB of device memory, " +
                             std::to_string(budget >> 20) + " MiB are available");
  }
  return std::min<std::int64_t>(pairs, static_cast<std::int64_t>(budget / pair_bytes));
}

// A device copy of `count` elements of host memory.
template <typename T>
DeviceArray<T> device_copy_of(const T* host, std::size_t count) {
  DeviceArray<T> array(std::max<std::size_t>(count, 1));
  if (count > 0) array.copy_from_host(host, count);
  return array;
}

}  // namespace attnfuzz
