// SPDX-License-Identifier: BSD-3-Clause
// Whether a name (a case id, a kernel's name) matches a pattern given on the command line or in a
// file: the name itself (a replayed file's name may hold * or [), or a shell wildcard pattern
// (fnmatch: * and ? match '/' too, so 'pr/1*' reaches every case of pr whose index starts with 1).
#pragma once

#include <fnmatch.h>

#include <string>

namespace attnfuzz {

inline bool matches_shell_pattern(const std::string& pattern, const std::string& name) {
  return name == pattern || fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace attnfuzz
