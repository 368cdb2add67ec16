// SPDX-License-Identifier: BSD-3-Clause
// An environment variable set while in scope, for the faulty plugins' switches
// (tests/plugins/faulty_attention.c); the harness and its workers inherit it.
#pragma once

#include <cstdlib>
#include <string>

namespace attnfuzz {

class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() { unsetenv(name_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
};

}  // namespace attnfuzz
