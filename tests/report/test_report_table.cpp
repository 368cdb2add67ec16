// SPDX-License-Identifier: BSD-3-Clause
// The stdout table: one row per case with its status and id, a reason line under failures and
// skips, and a summary whose last line CI tools read.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/report_writers.h"
#include "support/file_text.h"

namespace attnfuzz {
namespace {

CaseResult case_result(const std::string& id, CaseStatus status, const std::string& reason) {
  CaseResult result;
  result.attention_case.id = id;
  result.kernel_name = "cpu_flash";
  result.status = status;
  result.reason = reason;
  result.ran = status != CaseStatus::skip;
  result.comparison.error_ratio = status == CaseStatus::fail ? 12.5 : 0.0123456;
  result.comparison.max_abs_error = 0.000976;
  result.timing.total_seconds = 1.25;
  result.timing.kernel_seconds = 0.25;
  result.timing.compare_seconds = 0.5;
  return result;
}

std::string row_of(const CaseResult& result) {
  std::ostringstream out;
  write_table_row(out, result);
  return out.str();
}

TEST(ReportTable, HeaderNamesTheColumns) {
  std::ostringstream out;
  write_table_header(out);
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u);
  for (const char* column : {"case", "kernel", "shape", "err_ratio", "max_abs", "time_s"}) {
    EXPECT_NE(lines[0].find(column), std::string::npos) << column;
  }
}

TEST(ReportTable, PassingRowIsOneLineWithStatusIdKernelShapeAndFigures) {
  const CaseResult result = case_result("smoke/0", CaseStatus::pass, "");
  const std::vector<std::string> lines = lines_of(row_of(result));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("PASS smoke/0 ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("cpu_flash"), std::string::npos);
  EXPECT_NE(lines[0].find(describe_case(result.attention_case)), std::string::npos);
  EXPECT_NE(lines[0].find("0.0123"), std::string::npos);
  EXPECT_NE(lines[0].find("0.000976"), std::string::npos);
  EXPECT_NE(lines[0].find("1.250"), std::string::npos);
}

TEST(ReportTable, ColumnsLineUpAcrossRows) {
  const std::string first = lines_of(row_of(case_result("a/0", CaseStatus::pass, "")))[0];
  const std::string second =
      lines_of(row_of(case_result("a/123", CaseStatus::fail, "element beyond bound")))[0];
  EXPECT_EQ(first.size(), second.size());
  EXPECT_EQ(first.find("cpu_flash"), second.find("cpu_flash"));
}

TEST(ReportTable, FailingRowAddsAnIndentedReasonLine) {
  const std::vector<std::string> lines =
      lines_of(row_of(case_result("smoke/1", CaseStatus::fail, "element [0,0,3,7] beyond bound")));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("FAIL smoke/1 ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("12.5"), std::string::npos);
  EXPECT_EQ(lines[1], "    reason: element [0,0,3,7] beyond bound");
}

TEST(ReportTable, SkippedRowShowsDashesForFiguresAndItsReason) {
  const std::vector<std::string> lines =
      lines_of(row_of(case_result("smoke/2", CaseStatus::skip, "no CUDA device")));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("SKIP smoke/2 ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(" - "), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("0.000976"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "    reason: no CUDA device");
}

TEST(ReportTable, SummaryCountsGroupsSkipReasonsAndEndsWithTheCiLine) {
  RunReport report;
  report.results = {case_result("m/0", CaseStatus::pass, ""),
                    case_result("m/1", CaseStatus::fail, "beyond bound"),
                    case_result("m/2", CaseStatus::skip, "head_dim 96 unsupported"),
                    case_result("m/3", CaseStatus::skip, "no CUDA device"),
                    case_result("m/4", CaseStatus::skip, "no CUDA device")};
  report.summary.wall_seconds = 3.456;
  summarize(report);

  std::ostringstream out;
  write_table_summary(out, report);
  EXPECT_EQ(
      out.str(),
      "5 cases: 1 passed, 1 failed, 3 skipped (exit 1) in 3.46 s\n"
      "time by step (s, summed over the cases that ran): generate 0.000 kernel 0.500 "
      "repeat 0.000 (transfer 0.000 of those) reference 0.000 plain 0.000 compare 1.000 total "
      "2.500\n"
      "skipped because:\n"
      "  2 x no CUDA device\n"
      "  1 x head_dim 96 unsupported\n"
      "1 passed, 1 failed, 3 skipped\n");
}

TEST(ReportTable, TheBackwardStepShowsOnlyWhenACaseRanTheBackwardPass) {
  RunReport report;
  report.results = {case_result("m/0", CaseStatus::pass, ""),
                    case_result("m/1", CaseStatus::pass, "")};
  report.results[1].timing.backward_seconds = 0.25;
  summarize(report);
  std::ostringstream out;
  write_table_summary(out, report);
  EXPECT_NE(out.str().find(" compare 1.000 backward 0.250 total 2.500\n"), std::string::npos)
      << out.str();
}

TEST(ReportTable, SummaryWithoutSkipsHasNoSkipSection) {
  RunReport report;
  report.results = {case_result("m/0", CaseStatus::pass, ""),
                    case_result("m/1", CaseStatus::pass, "")};
  report.summary.wall_seconds = 0.5;
  summarize(report);

  std::ostringstream out;
  write_table_summary(out, report);
  EXPECT_EQ(
      out.str(),
      "2 cases: 2 passed, 0 failed, 0 skipped (exit 0) in 0.50 s\n"
      "time by step (s, summed over the cases that ran): generate 0.000 kernel 0.500 "
      "repeat 0.000 (transfer 0.000 of those) reference 0.000 plain 0.000 compare 1.000 total "
      "2.500\n"
      "2 passed, 0 failed, 0 skipped\n");
}

TEST(ReportTable, SummaryHasNoTimeByStepWhenNoCaseRan) {
  RunReport report;
  report.results = {case_result("m/0", CaseStatus::skip, "no CUDA device")};
  summarize(report);

  std::ostringstream out;
  write_table_summary(out, report);
  EXPECT_EQ(out.str().find("time by step"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace attnfuzz
