// SPDX-License-Identifier: BSD-3-Clause
#include "core/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attnfuzz {

namespace {
std::atomic<int> configured_thread_count{0};
}  // namespace

void set_default_thread_count(int threads) {
  configured_thread_count = threads;
}

int default_thread_count() {
  if (const int configured = configured_thread_count; configured > 0) return configured;
  if (const char* configured = std::getenv("ATTNFUZZ_THREADS")) {
    const int parsed = std::atoi(configured);
    if (parsed > 0) return parsed;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::int64_t item_count, const std::function<void(std::int64_t)>& body,
                  int threads) {
  if (threads <= 0) threads = default_thread_count();
  threads = static_cast<int>(std::min<std::int64_t>(threads, item_count));
  if (threads <= 1) {
    for (std::int64_t item = 0; item < item_count; ++item) body(item);
    return;
  }
  std::atomic<std::int64_t> next_item{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (std::int64_t item = next_item++; item < item_count; item = next_item++) {
      try {
        body(item);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        next_item = item_count;  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace attnfuzz
