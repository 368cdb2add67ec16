// SPDX-License-Identifier: BSD-3-Clause
// The fingerprint set says "new" exactly when std::unordered_set does, through its growth, for
// the empty slot's marker and for fingerprints that share their low bits (one probe chain).
#include "core/fingerprint_set.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "core/splitmix.h"

namespace attnfuzz {
namespace {

TEST(FingerprintSet, SaysNewExactlyWhenAnUnorderedSetDoes) {
  FingerprintSet set;
  std::unordered_set<std::uint64_t> reference;
  std::mt19937_64 random(3);
  for (int i = 0; i < 200000; ++i) {
    // Repeats, zero, and values equal in their low 20 bits among the well-mixed ones.
    const std::uint64_t draw = random();
    const std::uint64_t value = draw % 7 == 0   ? 0
                                : draw % 5 == 0 ? (draw % 4096) << 20
                                                : splitmix64_step(draw % 50000);
    EXPECT_EQ(set.insert(value), reference.insert(value).second) << i << ": " << value;
  }
}

TEST(FingerprintSet, KeepsWhatItHeldWhenReservedAfterInserting) {
  FingerprintSet set;
  for (std::uint64_t value = 1; value <= 3000; ++value) EXPECT_TRUE(set.insert(value * 1024));
  set.reserve(100000);
  for (std::uint64_t value = 1; value <= 3000; ++value) EXPECT_FALSE(set.insert(value * 1024));
}

}  // namespace
}  // namespace attnfuzz
