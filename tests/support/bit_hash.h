// SPDX-License-Identifier: BSD-3-Clause
// A running hash of bit patterns (64-bit FNV-1a, one word at a time), for tests that pin what a
// computation produces: a change to any bit changes the hash.
#pragma once

#include <cstdint>

namespace attnfuzz {

class BitHash {
 public:
  void add(std::uint64_t bits) { value_ = (value_ ^ bits) * 0x100000001b3ull; }
  std::uint64_t value() const { return value_; }

 private:
  std::uint64_t value_ = 0xcbf29ce484222325ull;  // FNV-1a's offset basis
};

}  // namespace attnfuzz
