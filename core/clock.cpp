// SPDX-License-Identifier: BSD-3-Clause
#include "core/clock.h"

#include <ctime>

namespace attnfuzz {

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace attnfuzz
