// SPDX-License-Identifier: BSD-3-Clause
// A case's inputs generated on the CUDA device, bit for bit those generate_inputs() makes on the
// host: the same buffers (poison outside the elements, guard tail included), drawn through the same
// arithmetic (case/input_draws.h), with the injected elements computed on the host and written on
// the device. It saves drawing large inputs on the host and copying them over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "case/data_distribution.h"

namespace attnfuzz {

// Q, K and V of the last case generated into it, in CUDA device memory. The buffers are kept and
// reused from case to case: one grows (is reallocated) only when a case needs more than it holds.
class DeviceInputs {
 public:
  DeviceInputs();
  ~DeviceInputs();
  DeviceInputs(DeviceInputs&&) noexcept;
  DeviceInputs& operator=(DeviceInputs&&) noexcept;

  // The tensor's buffer (element [0, 0, 0, 0] first, laid out by the problem's strides) and its
  // length in elements, that of the host's AttentionInputs vector; null and 0 before a case.
  const std::uint16_t* data(TensorRole tensor) const;
  std::size_t size(TensorRole tensor) const;
  // The tensor's buffer copied to the host (size() elements).
  std::vector<std::uint16_t> copy_to_host(TensorRole tensor) const;

 private:
  struct Arena;  // the device buffers (device_inputs.cu)
  std::unique_ptr<Arena> arena_;

  friend bool generate_inputs_on_device(const AttentionProblem& problem,
                                        DataDistribution distribution, std::uint64_t seed,
                                        const SpecialValueInjection& injection, DeviceInputs& out);
};

// Generates generate_inputs(problem, distribution, seed, injection) into `out` on the CUDA device
// (synchronously, on the default stream) and returns true; or returns false, leaving `out` as it
// was, for a case it does not cover, which the caller generates on the host and copies over:
//   - a varlen or paged problem (its rows are placed after drawing);
//   - fp8 inputs (quantized after drawing, with factors from whole groups);
//   - `large` injected into Q or K (its magnitude depends on the drawn tensors);
//   - every case in a build without CUDA.
// Dense problems of any layout or strides, every distribution and every other injection are
// covered. A CUDA error throws std::runtime_error (core/cuda_check.h).
bool generate_inputs_on_device(const AttentionProblem& problem, DataDistribution distribution,
                               std::uint64_t seed, const SpecialValueInjection& injection,
                               DeviceInputs& out);

}  // namespace attnfuzz
