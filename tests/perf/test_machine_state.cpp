// SPDX-License-Identifier: BSD-3-Clause
// The machine's state, read and never changed: the CPU's is always there; the GPU's is read through
// NVML where the driver has it, and otherwise says why not. Throttle reasons that slow the clocks
// make a timing suspect; an idle GPU or one at its application clocks does not.
#include "perf/machine_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace attnfuzz {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MachineState, TheCpuStateNamesItsCoresGovernorAndLoad) {
  const CpuState state = read_cpu_state();
  EXPECT_GT(state.cores, 0);
  EXPECT_FALSE(state.governor.empty());
  EXPECT_GE(state.load_average_1m, 0.0);
  EXPECT_EQ(cpu_state_to_json(state)["load_average"].size(), 3u);
}

TEST(MachineState, TheGpuStateIsReadOrSaysWhyNot) {
  const GpuState state = read_gpu_state();
  if (state.available) {
    EXPECT_FALSE(state.name.empty());
    EXPECT_FALSE(state.driver_version.empty());
    EXPECT_GT(state.sm_clock_mhz, 0u);
  } else {
    EXPECT_FALSE(state.unavailable_reason.empty());
    EXPECT_EQ(gpu_state_to_json(state)["reason"], state.unavailable_reason);
  }
}

TEST(MachineState, OnlyReasonsThatSlowTheClocksCount) {
  EXPECT_TRUE(slowing_throttle_reasons(0x1 | 0x2 | 0x10 | 0x100).empty());
  EXPECT_THAT(slowing_throttle_reasons(0x4 | 0x40),
              ElementsAre("sw_power_cap", "hw_thermal_slowdown"));
}

TEST(MachineState, ThrottlingOrAFallingClockMakesAGpuTimingSuspect) {
  GpuState before;
  before.available = true;
  before.sm_clock_mhz = 1980;
  GpuState after = before;
  EXPECT_FALSE(gpu_timing_suspect(before, after).has_value());
  after.throttle_reasons = 0x1;  // idle at the end: not a slowdown
  EXPECT_FALSE(gpu_timing_suspect(before, after).has_value());
  after.throttle_reasons = 0x20;
  EXPECT_THAT(gpu_timing_suspect(before, after).value(), HasSubstr("sw_thermal_slowdown"));
  after.throttle_reasons = 0;
  after.sm_clock_mhz = 1500;
  EXPECT_THAT(gpu_timing_suspect(before, after).value(), HasSubstr("from 1980 to 1500 MHz"));
  before.available = false;  // nothing read: nothing to suspect
  EXPECT_FALSE(gpu_timing_suspect(before, after).has_value());
}

TEST(MachineState, OtherWorkIsTheMachinesBusyTimeLessThisProcesssOverTheTimeBetween) {
  CpuTimes before, after;
  before.available = after.available = true;
  before.wall_seconds = 100;
  after.wall_seconds = 102;  // two seconds
  before.machine_busy_seconds = 50;
  after.machine_busy_seconds = 55;  // five core-seconds busy, three of them this process's
  before.own_seconds = 10;
  after.own_seconds = 13;
  EXPECT_DOUBLE_EQ(other_work_cores(before, after), 1.0);
  // Less what the ticks can be off by: 0.01 s on each of 64 cores, over the two seconds.
  before.cores = after.cores = 64;
  after.tick_seconds = 0.01;
  EXPECT_DOUBLE_EQ(other_work_cores(before, after), (5.0 - 3.0 - 0.64) / 2);
  after.available = false;
  EXPECT_EQ(other_work_cores(before, after), 0.0);
  // Read for real: the clocks move forward, this process's time is its own.
  const CpuTimes now = read_cpu_times(), later = read_cpu_times();
  EXPECT_GE(later.wall_seconds, now.wall_seconds);
  EXPECT_GE(later.own_seconds, now.own_seconds);
  EXPECT_GE(other_work_cores(now, later), 0.0);
}

TEST(MachineState, ACpuAlreadyBusyWhenTheBenchmarkBeginsIsWarnedOf) {
  CpuState state;
  state.cores = 2;
  state.load_average_1m = 1.5;
  EXPECT_FALSE(cpu_load_warning(state).has_value());
  state.load_average_1m = 3.2;
  EXPECT_THAT(cpu_load_warning(state).value(), HasSubstr("3.2 on 2 cores"));
}

}  // namespace
}  // namespace attnfuzz
