// SPDX-License-Identifier: BSD-3-Clause
// The problem's arithmetic at the extremes: a window of any width, up to 2^63 - 1, masks without
// overflowing, and a page size of any size gives its pages per sequence.
#include "core/attention_problem.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace attnfuzz {
namespace {

constexpr std::int64_t kWidest = std::numeric_limits<std::int64_t>::max();

bool same(KeyRange a, KeyRange b) {
  return a.first == b.first && a.end == b.end;
}

TEST(KeysAboutDiagonal, AWindowOfAnyWidthMasksAsNoWindowWithoutOverflowing) {
  for (const std::int64_t diagonal : {-5, 0, 3, 9, 20}) {
    for (const bool causal : {false, true}) {
      const KeyRange unbounded = keys_about_diagonal(diagonal, causal, -1, -1, 10);
      EXPECT_TRUE(same(keys_about_diagonal(diagonal, causal, kWidest, kWidest, 10), unbounded))
          << diagonal;
      EXPECT_TRUE(same(keys_about_diagonal(diagonal, causal, kWidest, -1, 10), unbounded));
      EXPECT_TRUE(same(keys_about_diagonal(diagonal, causal, -1, kWidest, 10), unbounded));
    }
  }
}

TEST(KeysAboutDiagonal, ANarrowWindowCutsBothSides) {
  const KeyRange keys = keys_about_diagonal(6, false, 2, 1, 10);
  EXPECT_EQ(keys.first, 4);
  EXPECT_EQ(keys.end, 8);
  const KeyRange causal = keys_about_diagonal(6, true, 2, 1, 10);
  EXPECT_EQ(causal.first, 4);
  EXPECT_EQ(causal.end, 7);
}

TEST(PagesFor, IsTheCeilingForAnyPageSize) {
  EXPECT_EQ(pages_for(16, 16), 1);
  EXPECT_EQ(pages_for(17, 16), 2);
  EXPECT_EQ(pages_for(1, 16), 1);
  EXPECT_EQ(pages_for(0, 16), 0);
  EXPECT_EQ(pages_for(16, kWidest), 1);
  EXPECT_EQ(pages_for(kWidest, kWidest), 1);
}

}  // namespace
}  // namespace attnfuzz
