// SPDX-License-Identifier: BSD-3-Clause
// An error of the harness itself (bad matrix, unreadable file, bad flag): ends the run with
// kExitHarnessError and its message, never a crash.
#pragma once

#include <stdexcept>
#include <string>

namespace attnfuzz {

class HarnessError : public std::runtime_error {
 public:
  explicit HarnessError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace attnfuzz
