#include "run/worker_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "core/physical_memory.h"

namespace attnfuzz {

std::int64_t default_worker_memory_limit(int workers) {
  // A machine that does not say is taken to have 16 GiB.
  const std::int64_t physical = physical_memory_bytes().value_or(std::int64_t{16} << 30);
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
