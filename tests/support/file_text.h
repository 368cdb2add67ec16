// SPDX-License-Identifier: BSD-3-Clause
// Reading back what a test, or a run it started, wrote: the whole file as bytes with
// core/file_io.h's read_file (a file that cannot be read throws HarnessError, which fails the
// test with the path and the reason), and text split into its lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "core/file_io.h"

namespace attnfuzz {

// The lines of `text`, without their '\n'; a last line without one counts too.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

}  // namespace attnfuzz
