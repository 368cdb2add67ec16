// SPDX-License-Identifier: BSD-3-Clause
// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014), as
// pure functions: the harness derives every random value from a key and a counter, with no
// generator state, so a value is the same whatever order it is drawn in, on the host or a CUDA
// device (core/host_device.h).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace attnfuzz {

// The golden gamma: SplitMix64 advances its state by this odd constant, 2^64 / phi, each step.
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's finaliser (its output function): a bijection of 64 bits in which every input bit
// affects every output bit. Maps 0 to 0.
ATTNFUZZ_HOST_DEVICE constexpr std::uint64_t splitmix64_finalise(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One full SplitMix64 step from `state`: the state advanced by the golden gamma, then finalised
// (what the reference generator's next() returns).
ATTNFUZZ_HOST_DEVICE constexpr std::uint64_t splitmix64_step(std::uint64_t state) {
  return splitmix64_finalise(state + kSplitMix64Gamma);
}

}  // namespace attnfuzz
