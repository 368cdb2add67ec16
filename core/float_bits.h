// SPDX-License-Identifier: BSD-3-Clause
// A float's bit pattern and back, for host and CUDA device code alike: the storage formats'
// conversions (core/dtype.h, core/fp8.h) work on the bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace attnfuzz {

ATTNFUZZ_HOST_DEVICE inline std::uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}
ATTNFUZZ_HOST_DEVICE inline float float_from_bits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

}  // namespace attnfuzz
