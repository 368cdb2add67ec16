// SPDX-License-Identifier: BSD-3-Clause
// The Markdown summary: the verdict line, one failure row per failing case with its replay
// command, skipped cases counted by reason, and cells that a kernel's message cannot break.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/report_writers.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CaseResult result_of(const std::string& id, CaseStatus status, const std::string& reason) {
  CaseResult result;
  result.attention_case.id = id;
  result.attention_case.seq_len_q = 113;
  result.kernel_name = "cpu_flash";
  result.status = status;
  result.reason = reason;
  result.ran = status != CaseStatus::skip;
  return result;
}

RunReport run_of(std::vector<CaseResult> results) {
  RunReport report;
  report.summary.matrix_name = "edges";
  report.summary.matrix_source = "corpus/matrix/edges.json";
  report.environment.backend = "cpu";
  report.environment.git_commit = "abc1234";
  report.results = std::move(results);
  summarize(report);
  return report;
}

std::string replay(const CaseResult& result) {
  return "fuzz_attention --case " + result.attention_case.id;
}

TEST(ReportMarkdown, AFailingRunListsEachFailureWithItsReplayCommandAndCountsSkipsByReason) {
  CaseResult failing = result_of("edges/7", CaseStatus::fail, "element (b=0, h=0, i=0, d=0)");
  failing.plant = "causal_off_by_one";
  failing.comparison.error_ratio = 35900.0;
  const std::string markdown =
      run_to_markdown(run_of({result_of("edges/0", CaseStatus::pass, ""), failing,
                              result_of("edges/9", CaseStatus::skip, "no tile for head_dim 80"),
                              result_of("edges/10", CaseStatus::skip, "no tile for head_dim 80"),
                              result_of("edges/11", CaseStatus::skip, "CUDA backend unavailable")}),
                      replay);
  EXPECT_THAT(markdown,
              HasSubstr("## attnfuzz edges: FAIL — 1 passed, 1 failed, 3 skipped (exit 1)"));
  EXPECT_THAT(markdown, HasSubstr("| `edges/7` | cpu_flash | causal_off_by_one | "));
  EXPECT_THAT(markdown, HasSubstr("| 3.59e+04 | element (b=0, h=0, i=0, d=0) | "
                                  "`fuzz_attention --case edges/7` |"));
  EXPECT_THAT(markdown, Not(HasSubstr("`edges/0`")));
  EXPECT_THAT(markdown,
              HasSubstr("| 2 | no tile for head_dim 80 |\n| 1 | CUDA backend unavailable |"));
}

TEST(ReportMarkdown, APassingRunHasNoFailureTable) {
  const std::string markdown =
      run_to_markdown(run_of({result_of("edges/0", CaseStatus::pass, "")}), replay);
  EXPECT_THAT(markdown, HasSubstr("PASS — 1 passed, 0 failed, 0 skipped (exit 0)"));
  EXPECT_THAT(markdown, Not(HasSubstr("### Failures")));
  EXPECT_THAT(markdown, Not(HasSubstr("### Skipped")));
}

TEST(ReportMarkdown, PipesAndLineBreaksInAReasonCannotBreakTheTable) {
  const std::string markdown = run_to_markdown(
      run_of({result_of("x/0", CaseStatus::fail, "kernel said: a|b\nsecond line")}), replay);
  EXPECT_THAT(markdown, HasSubstr("| kernel said: a\\|b second line |"));
  // Every table row has the same number of unescaped pipes as the header.
  const auto header = markdown.find("| case |");
  ASSERT_NE(header, std::string::npos);
  const auto count_pipes = [](const std::string& line) {
    int pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    return pipes;
  };
  const std::string header_line = markdown.substr(header, markdown.find('\n', header) - header);
  const auto row = markdown.find("| `x/0`");
  ASSERT_NE(row, std::string::npos);
  const std::string row_line = markdown.substr(row, markdown.find('\n', row) - row);
  EXPECT_EQ(count_pipes(row_line), count_pipes(header_line)) << row_line;
}

TEST(ReportMarkdown, ThreeThousandFailuresMakeASummaryOfFiftyRowsAndACount) {
  std::vector<CaseResult> results;
  for (int index = 0; index < 3000; ++index) {
    results.push_back(result_of("edges/" + std::to_string(index), CaseStatus::fail,
                                std::string(300, 'x')));  // a long reason, as real ones can be
  }
  for (int index = 0; index < 30; ++index) {
    results.push_back(result_of("s/" + std::to_string(index), CaseStatus::skip,
                                "reason " + std::to_string(index)));
  }
  const std::string markdown = run_to_markdown(run_of(results), replay);
  EXPECT_LT(markdown.size(), 256u << 10);
  EXPECT_THAT(markdown, HasSubstr("`edges/49`"));
  EXPECT_THAT(markdown, Not(HasSubstr("`edges/50`")));
  EXPECT_THAT(markdown, HasSubstr("| … and 2950 more failures (the JSON report lists them all) |"));
  EXPECT_THAT(markdown, HasSubstr("| … and 10 more reasons"));
}

}  // namespace
}  // namespace attnfuzz
