// write_file_atomically(): the file ends up with exactly the new contents, no temporary file is
// left behind, and a directory that does not exist is a HarnessError naming the path.
#include "core/write_file_atomically.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/file_io.h"
#include "core/harness_error.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test (TemporaryFolder), removed afterwards.
class WriteFileAtomically : public TemporaryFolder {
 protected:
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder_)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }
};

TEST_F(WriteFileAtomically, WritesTheContents) {
  const fs::path path = folder_ / "report.json";
  const std::string contents = std::string("{\"a\": 1}\n") + std::string(1, '\0') + "binary";
  write_file_atomically(path, contents);
  EXPECT_EQ(read_file(path), contents);
  EXPECT_EQ(entries(), std::vector<std::string>{"report.json"});
}

TEST_F(WriteFileAtomically, WritesAnEmptyFile) {
  const fs::path path = folder_ / "empty.txt";
  write_file_atomically(path, "");
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
}

TEST_F(WriteFileAtomically, ReplacesOldContentsAndLeavesNoTemporaryFiles) {
  const fs::path path = folder_ / "report.xml";
  write_file_atomically(path, std::string(10000, 'x'));
  write_file_atomically(path, "short");
  write_file_atomically(path, "shorter");
  EXPECT_EQ(read_file(path), "shorter");
  EXPECT_EQ(entries(), std::vector<std::string>{"report.xml"});
}

TEST_F(WriteFileAtomically, MissingDirectoryThrowsHarnessErrorNamingThePath) {
  const fs::path path = folder_ / "no_such_directory" / "report.json";
  try {
    write_file_atomically(path, "contents");
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
  }
  EXPECT_EQ(entries(), std::vector<std::string>{});
}

TEST_F(WriteFileAtomically, TargetThatIsADirectoryThrowsAndLeavesNoTemporaryFile) {
  const fs::path path = folder_ / "occupied";
  fs::create_directory(path);
  try {
    write_file_atomically(path, "contents");
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"occupied"});
}

}  // namespace
}  // namespace attnfuzz
