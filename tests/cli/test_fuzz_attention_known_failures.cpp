// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention --known-failures end to end: a listed failure is KNOWN and leaves the run's exit
// code to the other cases, in the table and every report (JSON, JUnit, Markdown, HTML); a listed
// case that passes fails the run, and its replay line repeats the list so that it fails again
// alone; a failure nobody listed still fails; a --resume judges streamed cases by its own list; a
// malformed list, or the list with --properties, is exit 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/file_text.h"
#include "support/fuzz_attention_binary.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Under --plant drop_last_key_tile: t/0 passes (128 keys fill two whole tiles), t/1 and t/2 fail
// (100 keys: the partial tile is dropped).
constexpr const char* kPassAndTwoFailures = R"({
  "name": "t",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 64, "seq_len_q": 70},
  "cases": [{"seq_len_k": 128}, {"seq_len_k": 100, "dtype": ["fp16", "bf16"]}]
})";

constexpr const char* kBf16Listed = R"({"known_failures": [
  {"where": {"dtype": "bf16", "seq_len_k": 100}, "failure": "elements fail",
   "reason": "drops the last key tile", "issue": "https://example.org/issues/7"}]})";

class FuzzAttentionKnownFailures : public FuzzAttention {
 protected:
  std::string known_failures(const char* text) const {
    return "--known-failures " + quoted(write("known.json", text).string());
  }
};

TEST_F(FuzzAttentionKnownFailures, AListedFailureIsKnownAndTheOtherCasesDecideTheExitCode) {
  const RunResult result =
      run_matrix(kPassAndTwoFailures, "--plant drop_last_key_tile " + known_failures(kBf16Listed) +
                                          " --json " + quoted(path("report.json").string()) +
                                          " --junit " + quoted(path("report.xml").string()) +
                                          " --markdown " + quoted(path("summary.md").string()) +
                                          " --html " + quoted(path("report.html").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;  // t/1 is not listed
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, HasSubstr("KNOWN t/2"));
  EXPECT_THAT(result.out, HasSubstr("known failure: drops the last key tile "
                                    "(https://example.org/issues/7; " +
                                    path("known.json").string() + "#/known_failures/0)"));
  EXPECT_EQ(result.last_line(), "1 passed, 1 failed, 0 skipped, 1 known");
  EXPECT_THAT(result.out, Not(HasSubstr("--case t/2")));  // a known case has no replay line

  const nlohmann::json report = nlohmann::json::parse(read_file(path("report.json")));
  EXPECT_EQ(report["summary"]["known"], 1);
  EXPECT_EQ(report["results"][2]["status"], "known");
  EXPECT_EQ(report["results"][2]["known_failure"]["issue"], "https://example.org/issues/7");
  EXPECT_THAT(read_file(path("report.xml")),
              HasSubstr("<skipped message=\"known failure: drops the last key tile"));
  EXPECT_THAT(read_file(path("summary.md")), HasSubstr("### Known failures (--known-failures)"));
  EXPECT_THAT(read_file(path("summary.md")), HasSubstr("| drops the last key tile |"));
  EXPECT_THAT(read_file(path("report.html")),
              HasSubstr("<h2>Known failures (1, --known-failures)"));
}

TEST_F(FuzzAttentionKnownFailures, WhenEveryFailureIsListedTheRunPasses) {
  const RunResult result = run_matrix(
      kPassAndTwoFailures, "--plant drop_last_key_tile " + known_failures(R"({"known_failures": [
        {"where": {"seq_len_k": 100}, "reason": "drops the last key tile", "issue": "i/7"}]})"));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.last_line(), "1 passed, 0 failed, 0 skipped, 2 known");
}

TEST_F(FuzzAttentionKnownFailures, AListedCaseThatPassesFailsTheRunAndItsReplayFailsAgain) {
  const RunResult result = run_matrix(kPassAndTwoFailures, known_failures(kBf16Listed));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/2"));
  EXPECT_THAT(result.out, HasSubstr("passes, but " + path("known.json").string() +
                                    "#/known_failures/0 lists it as a known failure"));
  EXPECT_THAT(result.out,
              HasSubstr("--case t/2 --kernel cpu_flash --backend cpu --known-failures " +
                        path("known.json").string()));
  const RunResult replayed =
      run_matrix(kPassAndTwoFailures, "--case t/2 " + known_failures(kBf16Listed));
  EXPECT_EQ(replayed.exit_code, 1) << replayed.out << replayed.err;
}

TEST_F(FuzzAttentionKnownFailures, AResumeJudgesEveryCaseOldAndNewByTheListItIsGiven) {
  const std::string stream = " --stream " + quoted(path("stream.jsonl").string());
  const std::string resume = " --resume " + quoted(path("stream.jsonl").string());
  const RunResult first = run_matrix(kPassAndTwoFailures, "--plant drop_last_key_tile --case t/2 " +
                                                              known_failures(kBf16Listed) + stream);
  EXPECT_EQ(first.last_line(), "0 passed, 0 failed, 0 skipped, 1 known") << first.out << first.err;
  // Without the list, the streamed t/2 is the failure it was; with it, known again.
  const RunResult unlisted = run_matrix(kPassAndTwoFailures, "--plant drop_last_key_tile" + resume);
  EXPECT_EQ(unlisted.exit_code, 1) << unlisted.out << unlisted.err;
  EXPECT_EQ(unlisted.last_line(), "1 passed, 2 failed, 0 skipped");
  const RunResult listed = run_matrix(
      kPassAndTwoFailures, "--plant drop_last_key_tile " + known_failures(kBf16Listed) + resume);
  EXPECT_EQ(listed.last_line(), "1 passed, 1 failed, 0 skipped, 1 known")
      << listed.out << listed.err;
}

TEST_F(FuzzAttentionKnownFailures, AMalformedListIsExitThreeNamingTheFileAndTheField) {
  const RunResult result = run_matrix(
      kPassAndTwoFailures,
      known_failures(
          R"({"known_failures": [{"reason": "r", "issue": "i", "where": {"dtyp": 1}}]})"));
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr(path("known.json").string() +
                                    ": /known_failures/0/where/dtyp: unknown case key \"dtyp\""));
  const RunResult missing =
      run_matrix(kPassAndTwoFailures, "--known-failures " + quoted(path("absent.json").string()));
  EXPECT_EQ(missing.exit_code, 3) << missing.out << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("absent.json"));
}

TEST_F(FuzzAttentionKnownFailures, ThePropertySearchRefusesTheList) {
  const RunResult result = run("--properties --budget 1 " + known_failures(kBf16Listed));
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err,
              HasSubstr("--known-failures judges the cases of a matrix or --replay run"));
}

}  // namespace
}  // namespace attnfuzz
