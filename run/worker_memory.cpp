// SPDX-License-Identifier: BSD-3-Clause
#include "run/worker_memory.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

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

std::int64_t group_resident_bytes(pid_t group, pid_t excluded) {
  std::int64_t total = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // stat: "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so the fields
    // are read after its last ')'.
    std::ifstream stat_file(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat_file, line)) continue;
    const std::size_t comm_end = line.rfind(')');
    if (comm_end == std::string::npos) continue;
    std::istringstream fields(line.substr(comm_end + 1));
    char state = 0;
    long long parent = 0, process_group = 0;
    if (!(fields >> state >> parent >> process_group) || process_group != group) continue;
    const auto pid = static_cast<pid_t>(std::stoll(name));
    if (pid == excluded) continue;
    const std::int64_t resident = resident_bytes(pid);
    if (resident > 0) total += resident;
  }
  return total;
}

}  // namespace attnfuzz
