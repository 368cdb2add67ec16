// SPDX-License-Identifier: BSD-3-Clause
// What the harness's own CUDA kernels share to launch: how many blocks cover some work, the
// grid-stride loop, and a fill with a 16-bit pattern (the dtypes' poison). Its kernels are the
// generator's (case/device_inputs.cu), the references' (oracle/) and the device path's checks
// (run/device_case.cu).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace attnfuzz {

// Blocks of `threads` that cover `work` items, at least 1 and at most `max_blocks` (a kernel with a
// grid-stride loop strides over the rest; one without must be given enough, as the default,
// CUDA's largest grid, does).
inline unsigned blocks_for(std::int64_t work, int threads,
                           std::int64_t max_blocks = (std::int64_t{1} << 31) - 1) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((work + threads - 1) / threads, 1,
                                                        std::max<std::int64_t>(max_blocks, 1)));
}

// Grid-stride loop: the body runs for every i in [0, count), whatever the grid's size.
#define ATTNFUZZ_FOR_EACH_THREAD(i, count)                                                \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
       i < (count); i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// Every element of buffer[0, count) set to `pattern`.
__global__ inline void fill_pattern(std::uint16_t* buffer, std::int64_t count,
                                    std::uint16_t pattern) {
  ATTNFUZZ_FOR_EACH_THREAD(i, count) {
    buffer[i] = pattern;
  }
}

}  // namespace attnfuzz
