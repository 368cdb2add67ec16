// Runs the real fuzz_attention binary for end-to-end tests: each test gets a temporary folder of
// its own for matrices, outputs and reports, and the exit code, stdout and stderr of each run.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

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

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
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

// Each test gets a folder of its own, removed afterwards, for matrices, outputs and reports.
class FuzzAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    folder_ = std::filesystem::temp_directory_path() /
              ("attnfuzz_fuzz_attention_" + std::to_string(getpid()) + "_" + name);
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::filesystem::path path(const std::string& name) const { return folder_ / name; }

  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  // Runs fuzz_attention with `arguments` (already quoted for the shell) and collects its exit
  // status, stdout and stderr.
  // A run that names no kernel or backend is pinned to the CPU backend: the suite's expectations
  // (which kernel ran, its replay lines, its plants) then hold on a machine with a GPU too, where
  // the default backend would pick the CUDA kernels. Tests of the GPU name their kernel.
  RunResult run(const std::string& arguments) const {
    const bool chooses_kernel = arguments.find("--backend") != std::string::npos ||
                                arguments.find("--kernel") != std::string::npos;
    const std::string command = quoted(ATTNFUZZ_FUZZ_ATTENTION) +
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

  std::filesystem::path folder_;
};

}  // namespace attnfuzz
