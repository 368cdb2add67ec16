// SPDX-License-Identifier: BSD-3-Clause
#include "core/physical_memory.h"

#include <unistd.h>

namespace attnfuzz {

std::optional<std::int64_t> physical_memory_bytes() {
  // Read once: the matrix reader asks for every case it checks.
  static const std::optional<std::int64_t> bytes = []() -> std::optional<std::int64_t> {
    const std::int64_t pages = sysconf(_SC_PHYS_PAGES);
    const std::int64_t bytes_per_page = sysconf(_SC_PAGE_SIZE);  // memory pages, not K/V pages
    if (pages <= 0 || bytes_per_page <= 0) return std::nullopt;
    return pages * bytes_per_page;
  }();
  return bytes;
}

}  // namespace attnfuzz
