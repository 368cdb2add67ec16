// SPDX-License-Identifier: BSD-3-Clause
// An array in CUDA device memory that frees itself: every cudaMalloc of the project goes through
// it, checked (core/cuda_check.h), so no error path leaks device memory.
#pragma once

#include <cstddef>
#include <memory>

#include "core/cuda_check.h"

namespace attnfuzz {

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) {
    T* pointer = nullptr;
    ATTNFUZZ_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&pointer), count * sizeof(T)));
    memory_.reset(pointer);
  }
  T* get() const { return memory_.get(); }

  // Copies `count` elements from host memory to the start of the array.
  void copy_from_host(const T* host, std::size_t count) {
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(get(), host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  // Copies the first `count` elements of the array to host memory.
  void copy_to_host(T* host, std::size_t count) const {
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host, get(), count * sizeof(T), cudaMemcpyDeviceToHost));
  }

 private:
  struct Free {
    void operator()(T* pointer) const { cudaFree(pointer); }  // never throws: runs on error paths
  };
  std::unique_ptr<T, Free> memory_;
};

}  // namespace attnfuzz
