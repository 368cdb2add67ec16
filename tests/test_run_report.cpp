// summarize(): the counts and the exit code a CI script acts on.
#include <initializer_list>

#include <gtest/gtest.h>

#include "fuzz/exit_codes.h"
#include "fuzz/run_report.h"

namespace attnfuzz {
namespace {

RunReport run_with(std::initializer_list<CaseStatus> statuses) {
  RunReport report;
  for (CaseStatus status : statuses) {
    CaseResult result;
    result.status = status;
    report.results.push_back(result);
  }
  summarize(report);
  return report;
}

TEST(RunReport, AllPassedExitsZero) {
  const RunSummary summary = run_with({CaseStatus::pass, CaseStatus::pass}).summary;
  EXPECT_EQ(summary.total, 2);
  EXPECT_EQ(summary.passed, 2);
  EXPECT_EQ(summary.failed, 0);
  EXPECT_EQ(summary.skipped, 0);
  EXPECT_EQ(summary.exit_code, kExitPass);
}

TEST(RunReport, PassesWithSomeSkipsStillExitZero) {
  const RunSummary summary = run_with({CaseStatus::skip, CaseStatus::pass}).summary;
  EXPECT_EQ(summary.passed, 1);
  EXPECT_EQ(summary.skipped, 1);
  EXPECT_EQ(summary.exit_code, kExitPass);
}

TEST(RunReport, AnyFailureExitsOneWhateverElseHappened) {
  const RunSummary summary =
      run_with({CaseStatus::pass, CaseStatus::fail, CaseStatus::skip, CaseStatus::pass}).summary;
  EXPECT_EQ(summary.total, 4);
  EXPECT_EQ(summary.passed, 2);
  EXPECT_EQ(summary.failed, 1);
  EXPECT_EQ(summary.skipped, 1);
  EXPECT_EQ(summary.exit_code, kExitFail);
}

TEST(RunReport, FailuresAmongOnlySkipsExitOne) {
  EXPECT_EQ(run_with({CaseStatus::skip, CaseStatus::fail}).summary.exit_code, kExitFail);
}

TEST(RunReport, AllSkippedExitsTwo) {
  const RunSummary summary = run_with({CaseStatus::skip, CaseStatus::skip}).summary;
  EXPECT_EQ(summary.skipped, 2);
  EXPECT_EQ(summary.exit_code, kExitSkip);
}

TEST(RunReport, EmptyRunExitsTwo) {
  const RunSummary summary = run_with({}).summary;
  EXPECT_EQ(summary.total, 0);
  EXPECT_EQ(summary.passed, 0);
  EXPECT_EQ(summary.failed, 0);
  EXPECT_EQ(summary.skipped, 0);
  EXPECT_EQ(summary.exit_code, kExitSkip);
}

TEST(RunReport, SummarizingTwiceDoesNotDoubleCount) {
  RunReport report = run_with({CaseStatus::pass, CaseStatus::fail});
  summarize(report);
  EXPECT_EQ(report.summary.total, 2);
  EXPECT_EQ(report.summary.passed, 1);
  EXPECT_EQ(report.summary.failed, 1);
}

}  // namespace
}  // namespace attnfuzz
