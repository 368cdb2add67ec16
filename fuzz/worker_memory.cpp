#include "fuzz/worker_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace attnfuzz {

std::int64_t default_worker_memory_limit(int workers) {
  const std::int64_t pages = sysconf(_SC_PHYS_PAGES);
  const std::int64_t page_size = sysconf(_SC_PAGE_SIZE);
  const std::int64_t physical =
      pages > 0 && page_size > 0 ? pages * page_size : std::int64_t{16} << 30;
  return physical / 4 * 3 / std::max(workers, 1);
}

std::int64_t resident_bytes(pid_t pid) {
  // statm: total program size, then resident pages.
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  std::int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return -1;
  return resident_pages * sysconf(_SC_PAGE_SIZE);
}

}  // namespace attnfuzz
