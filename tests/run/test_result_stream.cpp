// SPDX-License-Identifier: BSD-3-Clause
// The JSON Lines stream: each appended result is a line of its own, on disk at once; reading back
// gives every complete line in order and leaves out a last line cut off mid-write; reopening cuts
// that partial line away so new records start clean; a line that is not JSON is a harness error; a
// file that is not a stream of this run's cases (notes, a case file, another matrix's results) is
// refused and left byte for byte as it was.
#include "run/result_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <string>

#include "core/harness_error.h"
#include "support/file_text.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// The cases of the runs these streams belong to.
const std::set<std::string> kRunCases = {"m/0", "m/1", "m/2"};

CaseResult result_named(const std::string& id) {
  CaseResult result;
  result.attention_case.id = id;
  result.kernel_name = "cpu_flash";
  result.status = CaseStatus::skip;
  result.reason = "because";
  return result;
}

// A stream file in a folder of the test's own, not there until the test writes it.
class ResultStreamTest : public TemporaryFolder {
 protected:
  void SetUp() override {
    TemporaryFolder::SetUp();
    path_ = path("run.jsonl");
  }
  std::filesystem::path path_;
};

TEST_F(ResultStreamTest, EachAppendIsALineOnDiskAtOnce) {
  ResultStream stream(path_, kRunCases);
  stream.append(result_named("m/0"));
  EXPECT_EQ(lines_of(read_file(path_)).size(), 1u) << "visible before the stream is closed";
  stream.append(result_named("m/1"));
  const std::vector<nlohmann::json> records = read_result_stream(path_);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["case_id"], "m/0");
  EXPECT_EQ(records[1]["case_id"], "m/1");
}

TEST_F(ResultStreamTest, APartialLastLineIsLeftOutAndCutBeforeNewRecords) {
  { ResultStream(path_, kRunCases).append(result_named("m/0")); }
  std::ofstream(path_, std::ios::app) << R"({"case_id": "m/1", "sta)";
  EXPECT_EQ(read_result_stream(path_).size(), 1u);
  { ResultStream(path_, kRunCases).append(result_named("m/2")); }
  const std::vector<nlohmann::json> records = read_result_stream(path_);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["case_id"], "m/2");
}

TEST_F(ResultStreamTest, AMissingFileHasNoRecords) {
  EXPECT_TRUE(read_result_stream(path_).empty());
}

TEST_F(ResultStreamTest, ALineThatIsNotAnObjectIsAHarnessErrorNamingTheLine) {
  std::ofstream(path_) << "{\"case_id\": \"m/0\"}\nnot json\n";
  try {
    read_result_stream(path_);
    FAIL() << "accepted a line that is not JSON";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path_.string() + ": line 2: not a JSON object"));
  }
}

TEST_F(ResultStreamTest, AnUnwritableStreamIsAHarnessErrorNamingIt) {
  EXPECT_THROW(ResultStream("/nonexistent-folder/run.jsonl", kRunCases), HarnessError);
}

// What the file held before, for each kind of file that is not a stream of this run.
struct ForeignFile {
  const char* name;
  std::string contents;
  const char* message;
};

void PrintTo(const ForeignFile& file, std::ostream* out) {
  *out << file.name;
}

class ResultStreamForeignFile : public ResultStreamTest,
                                public ::testing::WithParamInterface<ForeignFile> {};

TEST_P(ResultStreamForeignFile, IsRefusedAndLeftAsItWas) {
  std::ofstream(path_, std::ios::binary) << GetParam().contents;
  try {
    ResultStream stream(path_, kRunCases);
    FAIL() << "opened " << GetParam().name << " as a stream";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path_.string()));
    EXPECT_THAT(error.what(), HasSubstr(GetParam().message));
  }
  EXPECT_EQ(read_file(path_), GetParam().contents);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ResultStreamForeignFile,
    ::testing::Values(ForeignFile{"notes", "my notes\nthe last line, without its newline",
                                  "is not a result stream"},
                      ForeignFile{"binary_case", std::string("AFZ\x01\x45\x00\x45\x00\x00\x01", 10),
                                  "not the start of a record"},
                      ForeignFile{"another_matrix",
                                  "{\"case_id\": \"other/0\"}\n{\"case_id\": \"ot", "another run"},
                      ForeignFile{"records_without_ids", "{\"status\": \"pass\"}\n",
                                  "another run"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnfuzz
