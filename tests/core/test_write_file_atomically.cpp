// SPDX-License-Identifier: BSD-3-Clause
// write_file_atomically(): the file ends up with exactly the new contents, no temporary file is
// left behind, and a directory that does not exist is a HarnessError naming the path; a symbolic
// link stays a link and its target is written; a FIFO is written in place, not replaced;
// check_file_writable finds, up front, the paths the write would fail on.
#include "core/write_file_atomically.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <thread>
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

TEST_F(WriteFileAtomically, ASymlinkStaysALinkAndItsTargetIsWritten) {
  const fs::path link = folder_ / "report.json", target = folder_ / "runs" / "today.json";
  fs::create_directories(target.parent_path());
  fs::create_symlink(fs::path("runs") / "today.json", link);  // relative, and dangling at first
  write_file_atomically(link, "first");
  write_file_atomically(link, "second");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(target), "second");
}

TEST_F(WriteFileAtomically, AFifoIsWrittenInPlaceNotReplaced) {
  const fs::path fifo = folder_ / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_file(fifo); });
  write_file_atomically(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
}

TEST_F(WriteFileAtomically, ADeviceThatRefusesTheBytesIsAHarnessError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  // Through a link of the test's own: a regression would replace the link, not the device.
  const fs::path link = folder_ / "full";
  fs::create_symlink("/dev/full", link);
  EXPECT_THROW(write_file_atomically(link, "contents"), HarnessError);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::status(link).type(), fs::file_type::character);
}

TEST_F(WriteFileAtomically, CheckFileWritableRefusesWhatTheWriteWouldAndLeavesNoFile) {
  EXPECT_NO_THROW(check_file_writable(folder_ / "new.json", "--json"));
  EXPECT_NO_THROW(check_file_writable("/dev/null", "--junit"));
  try {
    check_file_writable(folder_ / "absent" / "r.json", "--json");
    FAIL() << "a missing folder passed";
  } catch (const HarnessError& error) {
    EXPECT_NE(std::string(error.what()).find("--json: cannot write"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(check_file_writable(folder_, "--html"), HarnessError);
  EXPECT_EQ(entries(), std::vector<std::string>{});
}

}  // namespace
}  // namespace attnfuzz
