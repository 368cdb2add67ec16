// SPDX-License-Identifier: BSD-3-Clause
// Whether a process the tests watched is gone: for the tests that processes a kernel starts never
// outlive their worker, their run, or a harness killed with -9.
#pragma once

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace attnfuzz {

// Whether process `pid` is gone, or a zombie (which runs nothing and holds nothing but its id).
inline bool process_is_gone(long pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return true;
  const std::size_t comm_end = line.rfind(')');  // the state follows the command's name
  return comm_end != std::string::npos && line.substr(comm_end + 2, 1) == "Z";
}

// Whether process `pid` is gone within `seconds`: a SIGKILL is delivered when the process is next
// scheduled, not at the kill() call, so a check made at once may still see it running.
inline bool gone_within(long pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  while (!process_is_gone(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process_is_gone(pid);
}

}  // namespace attnfuzz
