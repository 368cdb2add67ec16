// SPDX-License-Identifier: BSD-3-Clause
// summarize(): the counts and the exit code a CI script acts on.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "core/exit_codes.h"
#include "report/run_report.h"

namespace attnfuzz {
namespace {

constexpr CaseStatus pass = CaseStatus::pass;
constexpr CaseStatus fail = CaseStatus::fail;
constexpr CaseStatus skip = CaseStatus::skip;
constexpr CaseStatus known = CaseStatus::known;

RunReport run_with(const std::vector<CaseStatus>& statuses) {
  RunReport report;
  for (const CaseStatus status : statuses) {
    CaseResult result;
    result.status = status;
    report.results.push_back(result);
  }
  summarize(report);
  return report;
}

// A run of cases with these statuses, and its summary.
struct SummaryRow {
  const char* name;  // the test's name
  std::vector<CaseStatus> statuses;
  int total, passed, failed, skipped;
  int exit_code;
  int known = 0;
};

void PrintTo(const SummaryRow& row, std::ostream* out) {
  *out << row.name;
}

const std::vector<SummaryRow> kSummaries = {
    // name, the statuses, then the summary: total, passed, failed, skipped, exit code
    {"AllPassedExitsZero", {pass, pass}, 2, 2, 0, 0, kExitPass},
    {"PassesWithSomeSkipsStillExitZero", {skip, pass}, 2, 1, 0, 1, kExitPass},
    {"AnyFailureExitsOneWhateverElseHappened", {pass, fail, skip, pass}, 4, 2, 1, 1, kExitFail},
    {"FailuresAmongOnlySkipsExitOne", {skip, fail}, 2, 0, 1, 1, kExitFail},
    {"AllSkippedExitsTwo", {skip, skip}, 2, 0, 0, 2, kExitSkip},
    {"EmptyRunExitsTwo", {}, 0, 0, 0, 0, kExitSkip},
    // Known failures (--known-failures) count neither way.
    {"PassesBesideKnownFailuresExitZero", {known, pass, known}, 3, 1, 0, 0, kExitPass, 2},
    {"AFailureBesideKnownFailuresExitsOne", {known, fail, pass}, 3, 1, 1, 0, kExitFail, 1},
    {"OnlyKnownFailuresPassNothingAndExitTwo", {known, skip}, 2, 0, 0, 1, kExitSkip, 1},
};

class Summary : public ::testing::TestWithParam<SummaryRow> {};

TEST_P(Summary, CountsEachStatusAndPicksTheExitCode) {
  const SummaryRow& row = GetParam();
  const RunSummary summary = run_with(row.statuses).summary;
  EXPECT_EQ(summary.total, row.total);
  EXPECT_EQ(summary.passed, row.passed);
  EXPECT_EQ(summary.failed, row.failed);
  EXPECT_EQ(summary.skipped, row.skipped);
  EXPECT_EQ(summary.known, row.known);
  EXPECT_EQ(summary.exit_code, row.exit_code);
}

INSTANTIATE_TEST_SUITE_P(RunReport, Summary, ::testing::ValuesIn(kSummaries),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RunReport, SummarizingTwiceDoesNotDoubleCount) {
  RunReport report = run_with({pass, fail});
  summarize(report);
  EXPECT_EQ(report.summary.total, 2);
  EXPECT_EQ(report.summary.passed, 1);
  EXPECT_EQ(report.summary.failed, 1);
}

}  // namespace
}  // namespace attnfuzz
