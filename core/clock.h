// SPDX-License-Identifier: BSD-3-Clause
// Time as the harness reports it: elapsed seconds for timings, UTC timestamps for records.
#pragma once

#include <chrono>
#include <string>

namespace attnfuzz {

// Seconds from `start` to now, on the monotonic clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The current time in UTC, ISO 8601 ("2026-11-22T13:37:00Z"), for reports.
std::string utc_timestamp();

}  // namespace attnfuzz
