// SPDX-License-Identifier: BSD-3-Clause
// A folder of its own for each test, under the system's temporary folder, removed afterwards. It
// is named after the process and the test, so the tests that ctest runs in parallel processes
// never share one. Derive a fixture from it and keep the test's files in folder_.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace attnfuzz {

class TemporaryFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised tests: "Suite/Fixture" and "Test/Row"
    }
    folder_ = std::filesystem::temp_directory_path() /
              ("attnfuzz_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
  }

  // A fixture that skips its test before calling SetUp() has no folder to remove.
  void TearDown() override {
    std::error_code ignored;
    if (!folder_.empty()) std::filesystem::remove_all(folder_, ignored);
  }

  std::filesystem::path path(const std::string& relative) const { return folder_ / relative; }

  // Writes `bytes` to `relative` (creating the folders on the way) and returns its path.
  std::filesystem::path write(const std::string& relative, const std::string& bytes) const {
    const std::filesystem::path file = path(relative);
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  std::filesystem::path folder_;
};

}  // namespace attnfuzz
