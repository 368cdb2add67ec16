// Whether a process the tests watched is gone: for the tests that processes a kernel starts never
// outlive their worker, their run, or a harness killed with -9.
#pragma once

#include <fstream>
#include <string>

namespace attnfuzz {

// Whether process `pid` is gone, or a zombie (which runs nothing and holds nothing but its id).
inline bool process_is_gone(long pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return true;
  const std::size_t comm_end = line.rfind(')');  // the state follows the command's name
  return comm_end != std::string::npos && line.substr(comm_end + 2, 1) == "Z";
}

}  // namespace attnfuzz
