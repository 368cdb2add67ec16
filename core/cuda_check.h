// SPDX-License-Identifier: BSD-3-Clause
// Every CUDA runtime call is checked: a failure throws std::runtime_error naming the call, the
// error and where it happened, which the harness turns into the case's failure reason.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace attnfuzz {

[[noreturn]] inline void throw_cuda_error(cudaError_t error, const char* call, const char* file,
                                          int line) {
  throw std::runtime_error(std::string(call) + " failed with " + cudaGetErrorName(error) + " (" +
                           cudaGetErrorString(error) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace attnfuzz

#define ATTNFUZZ_CUDA_CHECK(call)                                                   \
  do {                                                                              \
    const cudaError_t attnfuzz_cuda_error = (call);                                 \
    if (attnfuzz_cuda_error != cudaSuccess) {                                       \
      ::attnfuzz::throw_cuda_error(attnfuzz_cuda_error, #call, __FILE__, __LINE__); \
    }                                                                               \
  } while (false)
