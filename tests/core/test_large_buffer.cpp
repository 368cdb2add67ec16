// SPDX-License-Identifier: BSD-3-Clause
// LargeBuffer: a std::vector whose large allocations sit on 2 MiB boundaries (huge-page
// candidates) and that keeps every std::vector guarantee its users rely on.
#include "core/large_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

namespace attnfuzz {
namespace {

TEST(LargeBuffer, AllocationsOfTwoMebibytesOrMoreStartOnATwoMebibyteBoundary) {
  LargeBuffer<double> buffer;
  buffer.resize((std::size_t{2} << 20) / sizeof(double) + 1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % (std::size_t{2} << 20), 0u);
}

TEST(LargeBuffer, SmallAllocationsAreOrdinarilyAligned) {
  LargeBuffer<double> buffer(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % alignof(double), 0u);
}

TEST(LargeBuffer, GrowingKeepsTheElementsWrittenBefore) {
  LargeBuffer<std::int64_t> buffer(1000);
  std::iota(buffer.begin(), buffer.end(), 0);
  buffer.resize(1 << 20);  // moves to a huge-page-sized allocation
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(buffer[i], i);
}

TEST(LargeBuffer, AssignAndValueConstructionStillSetEveryElement) {
  LargeBuffer<double> buffer;
  buffer.assign(1 << 19, 2.5);
  for (double value : buffer) ASSERT_EQ(value, 2.5);
  const LargeBuffer<float> filled(1000, -1.0f);
  for (float value : filled) ASSERT_EQ(value, -1.0f);
}

TEST(LargeBuffer, ResizeForOverwriteKeepsStorageThatIsLargeEnough) {
  LargeBuffer<double> buffer(1000);
  const double* storage = buffer.data();
  resize_for_overwrite(buffer, 850);
  EXPECT_EQ(buffer.size(), 850u);
  EXPECT_EQ(buffer.data(), storage);
  resize_for_overwrite(buffer, 1000);
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_EQ(buffer.data(), storage);
}

TEST(LargeBuffer, ResizeForOverwriteGrowsToTheSizeAsked) {
  LargeBuffer<double> buffer(10);
  resize_for_overwrite(buffer, 1 << 20);
  EXPECT_EQ(buffer.size(), std::size_t{1} << 20);
  buffer.back() = 1.0;  // the whole size is usable
  EXPECT_EQ(buffer.back(), 1.0);
}

TEST(LargeBuffer, ResizeForOverwriteReleasesStorageOverAQuarterLargerThanNeeded) {
  LargeBuffer<double> buffer(1000);
  resize_for_overwrite(buffer, 700);
  EXPECT_EQ(buffer.size(), 700u);
  EXPECT_LT(buffer.capacity(), 1000u);
}

}  // namespace
}  // namespace attnfuzz
