// SPDX-License-Identifier: BSD-3-Clause
// A set of 64-bit fingerprints (values already well mixed, e.g. SplitMix64 outputs): open
// addressing with linear probing in one array, no allocation per element. The bias test inserts
// one fingerprint per row, up to millions per case; a node-based set spends more time allocating
// than the comparison spends comparing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnfuzz {

class FingerprintSet {
 public:
  // Room for `count` fingerprints without growing.
  void reserve(std::size_t count) {
    if (count * 2 > slots_.size()) rehash(count * 2);
  }

  // Inserts `fingerprint`; whether it was not there before.
  bool insert(std::uint64_t fingerprint) {
    if (fingerprint == kEmpty) {  // the empty slot's marker is kept aside
      const bool was_there = has_empty_marker_;
      has_empty_marker_ = true;
      return !was_there;
    }
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 1024 : slots_.size() * 2);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = fingerprint & mask;; slot = (slot + 1) & mask) {
      if (slots_[slot] == fingerprint) return false;
      if (slots_[slot] == kEmpty) {
        slots_[slot] = fingerprint;
        ++size_;
        return true;
      }
    }
  }

 private:
  static constexpr std::uint64_t kEmpty = 0;

  // A power of two at least `wanted` slots, every fingerprint placed again.
  void rehash(std::size_t wanted) {
    std::size_t size = 1024;
    while (size < wanted) size *= 2;
    std::vector<std::uint64_t> old(size, kEmpty);
    old.swap(slots_);
    size_ = 0;
    const std::size_t mask = slots_.size() - 1;
    for (std::uint64_t fingerprint : old) {
      if (fingerprint == kEmpty) continue;
      std::size_t slot = fingerprint & mask;
      while (slots_[slot] != kEmpty) slot = (slot + 1) & mask;
      slots_[slot] = fingerprint;
      ++size_;
    }
  }

  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
  bool has_empty_marker_ = false;
};

}  // namespace attnfuzz
