// SPDX-License-Identifier: BSD-3-Clause
// An array in CUDA device memory that frees itself: every cudaMalloc of the project goes through
// it, checked (core/cuda_check.h), so no error path leaks device memory.
#pragma once

#include <cstddef>
#include <cstdint>
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

// What a growing buffer asks for when `wanted` exceeds its `capacity`: half as much again as it
// held, so that cases of growing size (a matrix's order) reallocate a few times, not every time.
inline std::size_t grown_capacity(std::size_t wanted, std::size_t capacity) {
  return wanted > capacity + capacity / 2 ? wanted : capacity + capacity / 2;
}

// A device array that grows and never shrinks: kept from case to case, it costs no allocation (and
// no synchronisation) once it has reached the largest case's size.
template <typename T>
class DeviceBuffer {
 public:
  // Room for at least `count` elements (their values are undefined).
  T* reserve(std::int64_t count) {
    const auto wanted = static_cast<std::size_t>(count > 0 ? count : 1);
    if (wanted > capacity_) {
      array_.reset();  // the old one first: the device may not hold both
      capacity_ = 0;
      const std::size_t grown = grown_capacity(wanted, capacity_);
      try {
        array_ = std::make_unique<DeviceArray<T>>(grown);
        capacity_ = grown;
      } catch (const std::runtime_error&) {  // no room for the margin: exactly what is asked
        cudaGetLastError();
        array_ = std::make_unique<DeviceArray<T>>(wanted);
        capacity_ = wanted;
      }
    }
    return array_->get();
  }
  T* get() const { return array_ ? array_->get() : nullptr; }
  void copy_to_host(T* host, std::size_t count) const { array_->copy_to_host(host, count); }
  // Gives the memory back when it holds more than `bytes`: scratch that one large case needed
  // need not be kept from the kernels of the cases after it.
  void release_above(std::size_t bytes) {
    if (capacity_ * sizeof(T) > bytes) {
      array_.reset();
      capacity_ = 0;
    }
  }

 private:
  std::unique_ptr<DeviceArray<T>> array_;
  std::size_t capacity_ = 0;
};

// Host memory the device copies to and from at full speed (page-locked, cudaMallocHost): grows
// and never shrinks, like DeviceBuffer.
template <typename T>
class PinnedBuffer {
 public:
  T* reserve(std::int64_t count) {
    const auto wanted = static_cast<std::size_t>(count > 0 ? count : 1);
    if (wanted > capacity_) {
      memory_.reset();
      capacity_ = 0;
      const std::size_t grown = grown_capacity(wanted, capacity_);
      T* pointer = nullptr;
      ATTNFUZZ_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pointer), grown * sizeof(T)));
      memory_.reset(pointer);
      capacity_ = grown;
    }
    return memory_.get();
  }

 private:
  struct Free {
    void operator()(T* pointer) const { cudaFreeHost(pointer); }
  };
  std::unique_ptr<T, Free> memory_;
  std::size_t capacity_ = 0;
};

}  // namespace attnfuzz
