// SPDX-License-Identifier: BSD-3-Clause
// parallel_for: every item runs exactly once whatever the thread count, a body's exception reaches
// the caller after every thread has stopped, and the default thread count can be set and restored.
#include "core/parallel_for.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace attnfuzz {
namespace {

// Sets or clears ATTNFUZZ_THREADS and the process-wide default for one test, restoring both after.
class ThreadCountSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* value = std::getenv("ATTNFUZZ_THREADS")) saved_environment_ = value;
    unsetenv("ATTNFUZZ_THREADS");
    set_default_thread_count(0);
  }
  void TearDown() override {
    set_default_thread_count(0);
    if (saved_environment_) {
      setenv("ATTNFUZZ_THREADS", saved_environment_->c_str(), 1);
    } else {
      unsetenv("ATTNFUZZ_THREADS");
    }
  }

  static int hardware_threads() {
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }

 private:
  std::optional<std::string> saved_environment_;
};

TEST(ParallelFor, VisitsEveryItemExactlyOnceForEveryItemAndThreadCount) {
  for (const std::int64_t item_count : {0, 1, 2, 7, 1000}) {
    for (int threads = 1; threads <= 4; ++threads) {
      std::vector<std::atomic<int>> visits(static_cast<std::size_t>(item_count));
      std::atomic<int> out_of_range{0};
      parallel_for(
          item_count,
          [&](std::int64_t item) {
            if (item < 0 || item >= item_count) {
              ++out_of_range;
              return;
            }
            ++visits[static_cast<std::size_t>(item)];
          },
          threads);
      EXPECT_EQ(out_of_range, 0) << item_count << " items, " << threads << " threads";
      int wrong = 0;
      for (const std::atomic<int>& count : visits) wrong += count == 1 ? 0 : 1;
      EXPECT_EQ(wrong, 0) << item_count << " items, " << threads
                          << " threads: items not visited exactly once";
    }
  }
}

TEST(ParallelFor, ZeroThreadsMeansTheDefaultAndStillVisitsEveryItem) {
  std::vector<std::atomic<int>> visits(257);
  parallel_for(257, [&](std::int64_t item) { ++visits[static_cast<std::size_t>(item)]; });
  int wrong = 0;
  for (const std::atomic<int>& count : visits) wrong += count == 1 ? 0 : 1;
  EXPECT_EQ(wrong, 0);
}

TEST(ParallelFor, ExceptionFromOneItemIsRethrownToTheCaller) {
  struct ItemFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  for (int threads = 1; threads <= 4; ++threads) {
    std::atomic<int> calls{0};
    try {
      parallel_for(
          100,
          [&](std::int64_t item) {
            ++calls;
            if (item == 37) throw ItemFailed("item 37 failed");
          },
          threads);
      ADD_FAILURE() << threads << " threads: nothing was thrown";
    } catch (const ItemFailed& error) {
      EXPECT_STREQ(error.what(), "item 37 failed") << threads << " threads";
    }
    EXPECT_GE(calls, 1) << threads << " threads";
  }
}

TEST(ParallelFor, RethrowsOnlyAfterEveryThreadHasStopped) {
  for (int threads = 2; threads <= 4; ++threads) {
    std::atomic<int> running{0};
    int running_at_return = -1;
    try {
      parallel_for(
          64,
          [&](std::int64_t item) {
            ++running;
            if (item == 1) {
              // Throw while another item is still running (item 0's thread is asleep), so that a
              // caller that did not wait for the threads would see it running. The wait is bounded
              // so that an implementation running items one by one cannot hang here.
              const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
              while (running < 2 && std::chrono::steady_clock::now() < give_up) {
                std::this_thread::yield();
              }
              --running;
              throw std::runtime_error("item 1 failed");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            --running;
          },
          threads);
    } catch (const std::runtime_error&) {
      running_at_return = running.load();
    }
    EXPECT_EQ(running_at_return, 0) << threads << " threads";
  }
}

TEST(ParallelFor, EveryItemThrowingStillRethrowsExactlyOneException) {
  for (int threads = 1; threads <= 4; ++threads) {
    int caught = 0;
    try {
      parallel_for(
          50, [](std::int64_t item) { throw std::runtime_error("item " + std::to_string(item)); },
          threads);
    } catch (const std::runtime_error& error) {
      ++caught;
      EXPECT_EQ(std::string(error.what()).rfind("item ", 0), 0u);
    }
    EXPECT_EQ(caught, 1) << threads << " threads";
  }
}

TEST_F(ThreadCountSettings, SetDefaultThreadCountChangesTheDefault) {
  set_default_thread_count(3);
  EXPECT_EQ(default_thread_count(), 3);
  set_default_thread_count(1);
  EXPECT_EQ(default_thread_count(), 1);
  set_default_thread_count(7);
  EXPECT_EQ(default_thread_count(), 7);
}

TEST_F(ThreadCountSettings, SettingZeroRestoresTheHardwareDefault) {
  set_default_thread_count(hardware_threads() + 5);
  EXPECT_EQ(default_thread_count(), hardware_threads() + 5);
  set_default_thread_count(0);
  EXPECT_EQ(default_thread_count(), hardware_threads());
}

TEST_F(ThreadCountSettings, EnvironmentVariableSetsTheDefaultUnlessOverridden) {
  setenv("ATTNFUZZ_THREADS", "5", 1);
  EXPECT_EQ(default_thread_count(), 5);
  set_default_thread_count(2);
  EXPECT_EQ(default_thread_count(), 2);
}

TEST_F(ThreadCountSettings, UnusableEnvironmentValuesFallBackToTheHardwareCount) {
  for (const char* value : {"0", "-3", "many", ""}) {
    setenv("ATTNFUZZ_THREADS", value, 1);
    EXPECT_EQ(default_thread_count(), hardware_threads()) << "ATTNFUZZ_THREADS=" << value;
  }
}

}  // namespace
}  // namespace attnfuzz
