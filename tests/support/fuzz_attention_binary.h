// SPDX-License-Identifier: BSD-3-Clause
// Runs the real fuzz_attention binary for end-to-end tests: each test gets a temporary folder of
// its own for matrices, outputs and reports, and the exit code, stdout and stderr of each run.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/file_text.h"
#include "support/temporary_folder.h"

namespace attnfuzz {

// A path in single quotes for /bin/sh.
inline std::string quoted(const std::string& text) {
  std::string result = "'";
  for (const char c : text) {
    if (c == '\'') {
      result += "'\\''";
    } else {
      result += c;
    }
  }
  return result + "'";
}

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;

  std::string last_line() const {
    const std::vector<std::string> lines = lines_of(out);
    return lines.empty() ? "" : lines.back();
  }
};

// The binary under test: the one this build made, or the one ATTNFUZZ_TEST_FUZZ_ATTENTION names
// (to show that a new test fails on an older build of the harness).
inline std::string fuzz_attention_path() {
  const char* other = std::getenv("ATTNFUZZ_TEST_FUZZ_ATTENTION");
  return other != nullptr && *other != '\0' ? other : ATTNFUZZ_FUZZ_ATTENTION;
}

// Each test gets a folder of its own (TemporaryFolder), removed afterwards, for matrices, outputs
// and reports.
class FuzzAttention : public TemporaryFolder {
 protected:
  // Runs fuzz_attention with `arguments` (already quoted for the shell) and collects its exit
  // status, stdout and stderr.
  // A run that names no kernel or backend is pinned to the CPU backend: the suite's expectations
  // (which kernel ran, its replay lines, its plants) then hold on a machine with a GPU too, where
  // the default backend would pick the CUDA kernels. Tests of the GPU name their kernel.
  RunResult run(const std::string& arguments) const {
    const bool chooses_kernel = arguments.find("--backend") != std::string::npos ||
                                arguments.find("--kernel") != std::string::npos;
    const std::string command = quoted(fuzz_attention_path()) +
                                (chooses_kernel ? " " : " --backend cpu ") + arguments + " >" +
                                quoted(path("stdout.txt").string()) + " 2>" +
                                quoted(path("stderr.txt").string()) + " </dev/null";
    const int status = std::system(command.c_str());
    RunResult result;
    if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    result.out = read_file(path("stdout.txt"));
    result.err = read_file(path("stderr.txt"));
    return result;
  }

  // Runs fuzz_attention on a matrix file holding `matrix`, with `more` arguments after --configs.
  RunResult run_matrix(const std::string& matrix, const std::string& more = "") const {
    return run("--configs " + quoted(write("matrix.json", matrix).string()) + " " + more);
  }
};

}  // namespace attnfuzz
