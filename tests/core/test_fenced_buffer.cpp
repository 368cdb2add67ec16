// SPDX-License-Identifier: BSD-3-Clause
// A fenced buffer holds what it was given, starts aligned, and ends at the fence: a store or a load
// past its end or before its start kills the process with a report naming the array and the
// element; a store into the slack short of the fence is found afterwards.
#include "core/fenced_buffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace attnfuzz {
namespace {

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

TEST(FencedBuffer, HoldsItsContentsAndStartsAligned) {
  std::vector<std::uint16_t> contents(1000);
  std::iota(contents.begin(), contents.end(), std::uint16_t{7});
  const FencedBuffer<std::uint16_t> buffer{std::span<const std::uint16_t>(contents)};
  ASSERT_EQ(buffer.size(), contents.size());
  EXPECT_TRUE(std::equal(buffer.begin(), buffer.end(), contents.begin()));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % kFenceAlignment, 0u);
  EXPECT_FALSE(buffer.first_changed_slack_byte().has_value());

  const FencedBuffer<float> filled(33, 2.5f);
  EXPECT_EQ(std::count(filled.begin(), filled.end(), 2.5f), 33);
  const FencedBuffer<float> empty(0, 1.0f);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
}

TEST(FencedBuffer, AMovedBufferKeepsItsMemoryAndTheOriginalIsEmpty) {
  FencedBuffer<std::int32_t> original(10, 4);
  const std::int32_t* memory = original.data();
  FencedBuffer<std::int32_t> moved(std::move(original));
  EXPECT_EQ(moved.data(), memory);
  EXPECT_EQ(moved[9], 4);
  EXPECT_TRUE(original.empty());  // NOLINT(bugprone-use-after-move): what a move leaves
}

TEST(FencedBuffer, AStoreIntoTheSlackIsFoundAfterwardsOnEitherSide) {
  FencedBuffer<std::uint16_t> after(1001, 0);  // 2002 bytes: 46 bytes of slack to 2048
  after.data()[1001] = 1;                      // the first element past the end
  EXPECT_EQ(after.first_changed_slack_byte(), 0);

  FencedBuffer<std::uint16_t> before(1001, 0);
  before.data()[-3] = 1;  // bytes -6 and -5 before the start
  EXPECT_EQ(before.first_changed_slack_byte(), -5);
}

using FencedBufferDeathTest = ::testing::Test;

TEST_F(FencedBufferDeathTest, AStorePastTheEndFaultsNamingTheArrayAndTheElement) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        FencedBuffer<std::uint16_t> buffer(1000, 0);
        buffer.label("the output O", 100, 900);  // a tensor of 800 with margins of 100
        // The first element at the fence: the buffer's end rounded up to the alignment.
        const std::size_t fence = round_up(1000 * sizeof(std::uint16_t), kFenceAlignment) / 2;
        volatile std::uint16_t* at = buffer.data() + fence;
        *at = 1;
      },
      "fenced buffer: the kernel (wrote|touched) element 924 of the output O \\(its 800 "
      "elements have guard margins of 100 before and 100 after\\)");
}

TEST_F(FencedBufferDeathTest, ALoadFarPastTheEndFaultsToo) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        FencedBuffer<float> buffer(64, 0.0f);
        buffer.label("the log-sum-exp output", 0, 64);
        volatile const float* at = buffer.data() + 64 + 4096;
        volatile float sink = *at;
        (void)sink;
      },
      "fenced buffer: the kernel (read|touched) element 4160 of the log-sum-exp output");
}

TEST_F(FencedBufferDeathTest, AStoreBeforeTheStartFaultsWithANegativeElement) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        FencedBuffer<std::uint16_t> buffer(100, 0);
        buffer.label("the input K", 0, 100);
        const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        // The buffer's page starts at most a page before it: two pages before is in the fence.
        volatile std::uint16_t* at = buffer.data() - page;
        *at = 1;
      },
      "fenced buffer: the kernel (wrote|touched) element -[0-9]+ of the input K");
}

}  // namespace
}  // namespace attnfuzz
