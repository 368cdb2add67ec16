// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention end to end: the real binary on small matrix files in a temporary folder. Exit
// codes (0 pass, 1 fail, 2 nothing ran, 3 harness error), the failing element and the replay
// command, every harness error naming its cause, the JSON and JUnit reports, --list-kernels and
// --help.
#include <sys/wait.h>
#include <tinyxml2.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "support/fuzz_attention_binary.h"
#include "support/printers.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Two cases, neither a multiple of the 64-key tile, so drop_last_key_tile breaks both.
constexpr const char* kTwoCases = R"({
  "name": "t",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 64, "seq_len_q": 70},
  "cases": [{"seq_len_k": [100, 130]}]
})";

// Under --plant drop_last_key_tile: t/0 passes (128 keys fill two whole tiles), t/1 fails (100
// keys: the partial tile is dropped), t/2 is skipped (cpu_flash has no tile for head_dim 80).
constexpr const char* kPassFailSkip = R"({
  "name": "t",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 64, "seq_len_q": 70},
  "cases": [{"seq_len_k": 128}, {"seq_len_k": 100}, {"seq_len_k": 100, "head_dim": 80}]
})";

constexpr const char* kHeadDim80Only = R"({
  "name": "t",
  "cases": [{"batch": 1, "heads": 2, "seq_len": 70, "head_dim": 80}]
})";

// ---- exit codes and stdout ----

TEST_F(FuzzAttention, PassingMatrixExitsZeroAndCountsEveryCaseAsPassed) {
  const RunResult result = run_matrix(kTwoCases);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("PASS t/0"));
  EXPECT_THAT(result.out, HasSubstr("PASS t/1"));
  EXPECT_THAT(result.out, Not(HasSubstr("replay")));
  EXPECT_EQ(result.last_line(), "2 passed, 0 failed, 0 skipped");
}

TEST_F(FuzzAttention, PlantedBugExitsOneNamesTheFirstFailingElementAndPrintsAReplayCommand) {
  const RunResult result = run_matrix(kTwoCases, "--plant drop_last_key_tile");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/0"));
  EXPECT_THAT(result.out, HasSubstr("reason: element (b="));
  EXPECT_THAT(result.out, HasSubstr("replay a failing case:"));
  EXPECT_THAT(result.out, HasSubstr("fuzz_attention --configs " + path("matrix.json").string() +
                                    " --case t/0 --kernel cpu_flash --plant drop_last_key_tile"));
  EXPECT_THAT(result.out, HasSubstr("--case t/1"));
  EXPECT_EQ(result.last_line(), "0 passed, 2 failed, 0 skipped");
}

TEST_F(FuzzAttention, AScaleBeyondWhatTheToleranceCanJudgeIsNeverAPassWhateverTheKernel) {
  // 1e308 overflows the float64 oracle; 1e30 and 1e4 leave the scores' rounding free to move every
  // probability by any factor. No kernel, right or wrong, gets a pass: the correct one's cases are
  // skipped as inconclusive with the reason (a run of nothing else exits 2, as when nothing could
  // run); a wrong one's are skipped too, or fail where an element is wrong even by the wide bound.
  constexpr const char* kHugeScales = R"({
    "name": "t",
    "cases": [{"heads": 2, "seq_len": 70, "softmax_scale": [1e308, 1e30, 1e4]}]
  })";
  const RunResult correct = run_matrix(kHugeScales);
  EXPECT_EQ(correct.exit_code, 2) << correct.out << correct.err;
  EXPECT_THAT(correct.out, HasSubstr("reason: inconclusive: row (b=0, h=0, i=0)"));
  EXPECT_EQ(correct.last_line(), "0 passed, 0 failed, 3 skipped");
  for (const std::string plant : {"scale_ignored", "scale_hardcoded_64", "causal_off_by_one"}) {
    const RunResult wrong = run_matrix(kHugeScales, "--plant " + plant);
    EXPECT_NE(wrong.exit_code, 0) << plant << "\n" << wrong.out << wrong.err;
    EXPECT_THAT(wrong.out, Not(HasSubstr("PASS"))) << plant;
  }
}

TEST_F(FuzzAttention, ReplayCommandReproducesTheFailureOfItsCaseAlone) {
  const RunResult failing = run_matrix(kTwoCases, "--plant drop_last_key_tile");
  ASSERT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  const std::vector<std::string> lines = lines_of(failing.out);
  const auto header = std::find(lines.begin(), lines.end(), "replay a failing case:");
  ASSERT_NE(header, lines.end());
  ASSERT_NE(header + 1, lines.end());
  const std::string prefix = "  fuzz_attention ";
  ASSERT_THAT(*(header + 1), StartsWith(prefix));
  const std::string replay_arguments = (header + 1)->substr(prefix.size());
  ASSERT_EQ(folder_.string().find_first_of(" '\"$\\"), std::string::npos)
      << "the replay line is not shell-quoted; this test needs a plain temp folder path";

  const RunResult replay = run(replay_arguments);
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("FAIL t/0"));
  EXPECT_THAT(replay.out, Not(HasSubstr("t/1")));
  EXPECT_EQ(replay.last_line(), "0 passed, 1 failed, 0 skipped");
}

TEST_F(FuzzAttention, CudaBackendWithoutAGpuSkipsEveryCaseAndExitsTwo) {
  if (cuda_device_status().usable) GTEST_SKIP() << "this machine has a usable GPU";
  const RunResult result = run_matrix(kTwoCases, "--backend cuda");
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("SKIP t/0"));
  EXPECT_THAT(result.out, HasSubstr("CUDA backend unavailable"));
  EXPECT_EQ(result.last_line(), "0 passed, 0 failed, 2 skipped");
}

TEST_F(FuzzAttention, ShardsSplitTheMatrixAndABadShardIsAHarnessError) {
  const RunResult first = run_matrix(kTwoCases, "--shard 1/2");
  EXPECT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_THAT(first.out, HasSubstr("PASS t/0"));
  EXPECT_THAT(first.out, Not(HasSubstr("t/1")));
  const RunResult second = run_matrix(kTwoCases, "--shard 2/2");
  EXPECT_THAT(second.out, HasSubstr("PASS t/1"));
  EXPECT_THAT(second.out, Not(HasSubstr("t/0")));
  const RunResult bad = run_matrix(kTwoCases, "--shard 3/2");
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_THAT(bad.err, HasSubstr("--shard: shard 3 of 2 does not exist"));
}

TEST_F(FuzzAttention, MatrixWhoseOnlyCaseHasNoTileConfigurationExitsTwo) {
  const RunResult result = run_matrix(kHeadDim80Only);
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("SKIP t/0"));
  EXPECT_THAT(result.out, HasSubstr("no tile configuration for head_dim 80"));
  EXPECT_EQ(result.last_line(), "0 passed, 0 failed, 1 skipped");
}

TEST_F(FuzzAttention, PassFailAndSkipInOneRunExitOneAndCountEach) {
  const RunResult result = run_matrix(kPassFailSkip, "--plant drop_last_key_tile");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("PASS t/0"));
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, HasSubstr("SKIP t/2"));
  EXPECT_EQ(result.last_line(), "1 passed, 1 failed, 1 skipped");
}

TEST_F(FuzzAttention, QuietPrintsOnlyFailingAndSkippedCases) {
  const RunResult result = run_matrix(kPassFailSkip, "--plant drop_last_key_tile --quiet");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("PASS t/0")));
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, HasSubstr("SKIP t/2"));
  EXPECT_EQ(result.last_line(), "1 passed, 1 failed, 1 skipped");
}

// ---- harness errors: exit 3 and a message naming the cause ----

struct HarnessErrorCase {
  const char* name;
  const char* matrix;     // written to matrix.json when not null
  const char* arguments;  // "{matrix}" and "{folder}" are replaced by those paths
  std::vector<std::string> message_parts;
};

void PrintTo(const HarnessErrorCase& error_case, std::ostream* out) {
  *out << error_case.name;
}

class FuzzAttentionHarnessError : public FuzzAttention,
                                  public ::testing::WithParamInterface<HarnessErrorCase> {};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

TEST_P(FuzzAttentionHarnessError, ExitsThreeAndNamesTheProblemOnStderr) {
  const HarnessErrorCase& error_case = GetParam();
  if (error_case.matrix != nullptr) write("matrix.json", error_case.matrix);
  std::string arguments =
      replaced(error_case.arguments, "{matrix}", quoted(path("matrix.json").string()));
  arguments = replaced(arguments, "{folder}", folder_.string());
  const RunResult result = run(arguments);
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, StartsWith("fuzz_attention: error: "));
  for (const std::string& part : error_case.message_parts) {
    EXPECT_THAT(result.err, HasSubstr(part));
  }
  // Nothing ran: no summary on stdout.
  EXPECT_THAT(result.out, Not(HasSubstr(" passed, ")));
}

constexpr const char* kValidMatrix =
    R"({"name": "t", "cases": [{"batch": 1, "heads": 2, "seq_len": 70, "head_dim": 64}]})";

// A 200 KB matrix whose one case is nested 100,000 arrays deep.
const std::string kDeepMatrix =
    R"({"name": "t", "cases": [)" + std::string(100000, '[') + std::string(100000, ']') + "]}";

INSTANTIATE_TEST_SUITE_P(
    Causes, FuzzAttentionHarnessError,
    ::testing::Values(
        HarnessErrorCase{"malformed_json",
                         R"({"name": "t", "cases": [{"seq_len": 70,}]})",
                         "--configs {matrix}",
                         {"matrix.json: malformed JSON at byte 40", "syntax error"}},
        HarnessErrorCase{"missing_file",
                         nullptr,
                         "--configs {folder}/absent.json",
                         {"cannot open", "absent.json", "No such file or directory"}},
        HarnessErrorCase{"unknown_key",
                         R"({"name": "t", "cases": [{"seq_len": 70, "sequence": 3}]})",
                         "--configs {matrix}",
                         {"case t/0", "/cases/0/sequence", "unknown key \"sequence\""}},
        HarnessErrorCase{"heads_not_a_multiple_of_kv_heads",
                         R"({"name": "t", "cases": [{"heads": 3, "kv_heads": 2}]})",
                         "--configs {matrix}",
                         {"/cases/0/kv_heads", "heads 3 is not a multiple of kv_heads 2"}},
        HarnessErrorCase{"unknown_plant",
                         kValidMatrix,
                         "--configs {matrix} --plant bogus",
                         {"--plant", "unknown planted bug 'bogus'"}},
        HarnessErrorCase{"unknown_backend",
                         kValidMatrix,
                         "--configs {matrix} --backend tpu",
                         {"--backend", "unknown backend 'tpu'"}},
        HarnessErrorCase{"unknown_flag",
                         kValidMatrix,
                         "--configs {matrix} --frobnicate",
                         {"command line", "--frobnicate"}},
        HarnessErrorCase{"unknown_case_id",
                         kValidMatrix,
                         "--configs {matrix} --case t/9",
                         {"--case", "no case id matches 't/9'", "matrix.json", "--list-cases"}},
        HarnessErrorCase{"report_flag_with_properties",
                         kValidMatrix,
                         "--properties --budget 1 --json {folder}/report.json",
                         {"--json reports a matrix run; --properties writes no report"}},
        HarnessErrorCase{"case_pattern_matching_nothing",
                         kValidMatrix,
                         "--configs {matrix} --case 't/0' --case 'u/*'",
                         {"--case", "no case id matches 'u/*'"}},
        HarnessErrorCase{"unknown_kernel_in_the_matrix",
                         R"({"name": "t", "cases": [{"seq_len": 70, "kernel": "gpu_magic"}]})",
                         "--configs {matrix}",
                         {"case t/0", "unknown kernel 'gpu_magic'", "this build has: cpu_flash"}},
        HarnessErrorCase{"unknown_kernel_flag",
                         kValidMatrix,
                         "--configs {matrix} --kernel nope",
                         {"unknown kernel 'nope'"}},
        HarnessErrorCase{"negative_threads",
                         kValidMatrix,
                         "--configs {matrix} --threads -1",
                         {"--threads", "must be >= 0"}},
        HarnessErrorCase{"zero_repeats",
                         kValidMatrix,
                         "--configs {matrix} --repeats 0",
                         {"--repeats", "must be from 1", "got 0"}},
        HarnessErrorCase{"too_many_repeats",
                         kValidMatrix,
                         "--configs {matrix} --repeats 1000000",
                         {"--repeats", "to 1000", "got 1000000"}},
        HarnessErrorCase{"matrix_nested_too_deep",
                         kDeepMatrix.c_str(),
                         "--configs {matrix}",
                         {"matrix.json", "nested more than 64 levels deep"}},
        HarnessErrorCase{"matrix_without_end",
                         nullptr,
                         "--configs /dev/zero",
                         {"/dev/zero is larger than 64 MiB"}},
        HarnessErrorCase{"describe_a_folder", nullptr, "--describe {folder}", {"is a directory"}},
        HarnessErrorCase{"save_cases_onto_a_file",
                         kValidMatrix,
                         "--configs {matrix} --save-cases {matrix}",
                         {"--save-cases", "exists and is not a folder"}},
        HarnessErrorCase{"save_cases_that_saves_nothing",
                         R"({"name": "t", "cases": [{"heads": 9, "kv_heads": 9, "seq_len": 70}]})",
                         "--configs {matrix} --save-cases {folder}/saved",
                         {"--save-cases", "none of the 1 selected cases", "nothing was saved"}},
        HarnessErrorCase{"infinite_case_timeout",
                         kValidMatrix,
                         "--configs {matrix} --case-timeout inf",
                         {"--case-timeout", "got inf"}},
        HarnessErrorCase{"memory_limit_past_int64",
                         kValidMatrix,
                         "--configs {matrix} --memory-limit 99999999999999",
                         {"--memory-limit", "got 99999999999999"}},
        HarnessErrorCase{"overflow_blames_the_factor_out_of_proportion",
                         R"({"name": "t", "cases": [
                             {"batch": 4611686018427387904, "heads": 4, "seq_len": 1}]})",
                         "--configs {matrix}",
                         {"field /cases/0/batch", "4611686018427387904 * 1 * 4 * 64 overflows"}},
        HarnessErrorCase{"report_folder_missing",
                         kValidMatrix,
                         "--configs {matrix} --json {folder}/absent/report.json",
                         {"--json", "absent does not exist"}},
        HarnessErrorCase{"report_path_is_a_folder",
                         kValidMatrix,
                         "--configs {matrix} --junit {folder}",
                         {"--junit", "is a directory"}},
        HarnessErrorCase{"baseline_without_bench",
                         kValidMatrix,
                         "--configs {matrix} --baseline {folder}/b.json",
                         {"--baseline, --compare-anyway, --against-lib, --against-kernel and "
                          "--against-plant need --bench"}},
        HarnessErrorCase{"bench_seconds_zero",
                         kValidMatrix,
                         "--configs {matrix} --bench --bench-seconds 0",
                         {"--bench-seconds", "more than 0"}},
        HarnessErrorCase{"bench_rounds_zero",
                         kValidMatrix,
                         "--configs {matrix} --bench --bench-rounds 0",
                         {"--bench-rounds", "from 1 to 100"}},
        HarnessErrorCase{"max_slowdown_negative",
                         kValidMatrix,
                         "--configs {matrix} --bench --max-slowdown -0.1",
                         {"--max-slowdown", "from 0 to 10"}},
        HarnessErrorCase{"baseline_missing",
                         kValidMatrix,
                         "--configs {matrix} --bench --baseline {folder}/absent.json",
                         {"--baseline", "cannot open", "absent.json"}},
        HarnessErrorCase{"baseline_not_a_bench_report",
                         R"({"name": "t", "cases": [{"seq_len": 70}]})",
                         "--configs {matrix} --bench --baseline {matrix}",
                         {"--baseline", "no \"bench\" section"}},
        HarnessErrorCase{"misspelt_flag",
                         kValidMatrix,
                         "--configs {matrix} --bnech",
                         {"--bnech; did you mean --bench?"}},
        HarnessErrorCase{"unknown_flag_far_from_any",
                         kValidMatrix,
                         "--configs {matrix} --zzzzzzzz",
                         {"not expected: --zzzzzzzz (see --help)"}},
        HarnessErrorCase{"two_reports_on_stdout",
                         kValidMatrix,
                         "--configs {matrix} --json - --junit -",
                         {"--json and --junit both name standard output (-)"}},
        HarnessErrorCase{"bench_with_resume",
                         kValidMatrix,
                         "--configs {matrix} --bench --resume {matrix}",
                         {"--resume does not go with --bench"}}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- reports ----

// The devices are reached through links in the test's own folder: a build that still renamed over
// a report's path would replace those links, never /dev/null itself (the tests run as root in CI).
TEST_F(FuzzAttention, ReportsFollowASymlinkAndWriteADeviceInPlace) {
  const std::filesystem::path link = path("report.json"), target = path("real.json");
  std::filesystem::create_symlink(target.filename(), link);
  std::filesystem::create_symlink("/dev/null", path("null"));
  std::filesystem::create_symlink("/proc/self/fd/1", path("stdout"));  // as /dev/stdout is
  const RunResult result =
      run_matrix(kValidMatrix, "--quiet --json " + quoted(link.string()) + " --junit " +
                                   quoted(path("null").string()) + " --markdown " +
                                   quoted(path("stdout").string()));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced by a file";
  EXPECT_NO_THROW(nlohmann::json::parse(read_file(target)));
  EXPECT_TRUE(std::filesystem::is_symlink(path("null"))) << "a device's link was replaced";
  EXPECT_TRUE(std::filesystem::is_symlink(path("stdout"))) << "a device's link was replaced";
  EXPECT_THAT(result.out, HasSubstr("## attnfuzz t: PASS"));
}

TEST_F(FuzzAttention, AReportThatCannotBeWrittenNeitherStopsTheOthersNorHidesAFailure) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  std::filesystem::create_symlink("/dev/full", path("full"));  // refuses every byte: ENOSPC
  const std::string reports = " --json " + quoted(path("full").string()) + " --junit " +
                              quoted(path("report.xml").string());
  const RunResult failing = run_matrix(kValidMatrix, "--plant output_truncation" + reports);
  EXPECT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  EXPECT_THAT(failing.err, HasSubstr("--json: cannot write " + path("full").string()));
  EXPECT_TRUE(std::filesystem::exists(path("report.xml")));

  std::filesystem::remove(path("report.xml"));
  const RunResult passing = run_matrix(kValidMatrix, reports);
  EXPECT_EQ(passing.exit_code, 3) << passing.out << passing.err;
  EXPECT_TRUE(std::filesystem::exists(path("report.xml")));
}

TEST_F(FuzzAttention, ReplayedRegressionsEachHaveTheirOwnIdAndReplayCommand) {
  // Two saved regressions whose matrices are both called "regression", as older ones are.
  std::filesystem::create_directories(path("saved"));
  write("saved/a.json", R"({"name": "regression", "cases": [{"seq_len": 70}]})");
  write("saved/b.json", R"({"name": "regression", "cases": [{"seq_len": 90}]})");
  const std::string saved = quoted(path("saved").string());
  const RunResult all = run("--replay " + saved + " --plant output_truncation");
  EXPECT_EQ(all.exit_code, 1) << all.out << all.err;
  EXPECT_THAT(all.out, HasSubstr("FAIL a.json/0 "));
  EXPECT_THAT(all.out, HasSubstr("FAIL b.json/0 "));
  EXPECT_THAT(all.out, HasSubstr("--replay " + path("saved/b.json").string()));

  const RunResult one = run("--replay " + saved + " --case b.json/0");
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_EQ(one.last_line(), "1 passed, 0 failed, 0 skipped");
}

TEST_F(FuzzAttention, ACaseFileCutShortIsReplayedSayingWhichFieldsTookTheirDefaults) {
  // A whole binary case of seq_len 70, then the same cut in the middle of its seed.
  ASSERT_EQ(run_matrix(kValidMatrix, "--save-cases " + quoted(path("saved").string())).exit_code,
            0);
  const std::string whole = read_file(path("saved/t_0"));
  write("cut", whole.substr(0, 20));
  const RunResult result = run("--describe " + quoted(path("cut").string()));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("ends after 20 bytes, before its field 'seed'"));
  const RunResult intact = run("--describe " + quoted(path("saved/t_0").string()));
  EXPECT_THAT(intact.err, Not(HasSubstr("ends after")));
}

TEST_F(FuzzAttention, DescribePrintsOneMatrixDocumentThatRunsTheSameCases) {
  write("two.json", kTwoCases);
  const RunResult described = run("--describe " + quoted(path("two.json").string()));
  ASSERT_EQ(described.exit_code, 0) << described.err;
  const nlohmann::json document = nlohmann::json::parse(described.out);  // one document, not two
  EXPECT_EQ(document["name"], "two.json");
  ASSERT_EQ(document["cases"].size(), 2u);
  EXPECT_EQ(document["cases"][1]["seq_len_k"], 130);
  write("described.json", described.out);
  const RunResult rerun = run("--configs " + quoted(path("described.json").string()));
  EXPECT_EQ(rerun.last_line(), "2 passed, 0 failed, 0 skipped");
}

TEST_F(FuzzAttention, AReportOnStandardOutputLeavesItAloneThereAndTheTableGoesToStderr) {
  const RunResult result = run_matrix(kTwoCases, "--json -");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);  // nothing but the report
  EXPECT_EQ(report["summary"]["passed"], 2);
  EXPECT_THAT(result.err, HasSubstr("2 passed, 0 failed, 0 skipped"));
  EXPECT_FALSE(std::filesystem::exists(path("-")));
}

TEST_F(FuzzAttention, OffATerminalProgressLinesGoToStderrNowAndThen) {
  const RunResult result = run_matrix(kTwoCases, "--progress-every 0.000001");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("progress: 1/2 cases, 0 failed, 0 skipped, "));
  EXPECT_THAT(result.err, HasSubstr("progress: 2/2 cases, 0 failed, 0 skipped, "));
  EXPECT_THAT(result.out, Not(HasSubstr("progress:")));
  const RunResult quiet = run_matrix(kTwoCases, "--progress-every 0");
  EXPECT_THAT(quiet.err, Not(HasSubstr("progress:")));
}

TEST_F(FuzzAttention, TheMarkdownSummaryIsAddedToWhatItsFileHolds) {
  write("summary.md", "## an earlier step\n");
  ASSERT_EQ(run_matrix(kTwoCases, "--markdown " + quoted(path("summary.md").string())).exit_code,
            0);
  const std::string summary = read_file(path("summary.md"));
  EXPECT_THAT(summary, StartsWith("## an earlier step\n\n## attnfuzz t: PASS"));
}

TEST_F(FuzzAttention, VersionNamesTheReleaseTheCommitTheBuildAndTheCudaLibraries) {
  const RunResult result = run("--version");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("fuzz_attention 0."));
  EXPECT_THAT(result.out, HasSubstr("git commit: "));
  EXPECT_THAT(result.out, HasSubstr("CUDA: "));
  EXPECT_THAT(result.out, HasSubstr("BLAS: "));
}

TEST_F(FuzzAttention, AStreamFileThatIsNotAStreamOfThisRunIsRefusedAndKept) {
  const std::string notes = "my notes\nthe last line, without its newline";
  write("notes.txt", notes);
  const RunResult result =
      run_matrix(kValidMatrix, "--stream " + quoted(path("notes.txt").string()));
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("is not a result stream"));
  EXPECT_EQ(read_file(path("notes.txt")), notes);
}

TEST_F(FuzzAttention, JsonReportOfAPassAFailAndASkipCarriesEveryField) {
  const RunResult result = run_matrix(
      kPassFailSkip, "--plant drop_last_key_tile --json " + quoted(path("report.json").string()));
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  const nlohmann::json report = nlohmann::json::parse(read_file(path("report.json")));

  const nlohmann::json& summary = report.at("summary");
  EXPECT_EQ(summary.at("total"), 3);
  EXPECT_EQ(summary.at("passed"), 1);
  EXPECT_EQ(summary.at("failed"), 1);
  EXPECT_EQ(summary.at("skipped"), 1);
  EXPECT_EQ(summary.at("exit_code"), 1);
  EXPECT_EQ(summary.at("matrix_name"), "t");

  const std::string git_commit = report.at("environment").at("git_commit").get<std::string>();
  EXPECT_TRUE(std::regex_match(git_commit, std::regex("[0-9a-f]{7,40}|unknown"))) << git_commit;

  const nlohmann::json& results = report.at("results");
  ASSERT_EQ(results.size(), 3u);
  const std::regex iso_8601(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  const char* const statuses[] = {"pass", "fail", "skip"};
  const int seq_len_k[] = {128, 100, 100};
  const int head_dim[] = {64, 64, 80};
  for (std::size_t i = 0; i < 3; ++i) {
    const nlohmann::json& each = results[i];
    SCOPED_TRACE("result " + std::to_string(i));
    EXPECT_EQ(each.at("case_id"), "t/" + std::to_string(i));
    EXPECT_EQ(each.at("kernel_name"), "cpu_flash");
    EXPECT_EQ(each.at("plant"), "drop_last_key_tile");
    EXPECT_EQ(each.at("status"), statuses[i]);
    EXPECT_TRUE(std::regex_match(each.at("timestamp").get<std::string>(), iso_8601))
        << each.at("timestamp");
    const nlohmann::json& config = each.at("config");
    EXPECT_EQ(config.at("batch_size"), 1);
    EXPECT_EQ(config.at("num_heads"), 2);
    EXPECT_EQ(config.at("seq_len"), 70);
    EXPECT_EQ(config.at("seq_len_k"), seq_len_k[i]);
    EXPECT_EQ(config.at("head_dim"), head_dim[i]);
    EXPECT_EQ(config.at("dtype"), "fp16");
  }

  const nlohmann::json& passed = results[0];
  EXPECT_EQ(passed.at("reason"), "");
  const nlohmann::json& pass_figures = passed.at("correctness");
  EXPECT_EQ(pass_figures.at("passed"), true);
  EXPECT_GT(pass_figures.at("max_abs_error").get<double>(), 0.0);
  EXPECT_LT(pass_figures.at("max_abs_error").get<double>(), 0.01);
  EXPECT_GT(pass_figures.at("mean_abs_error").get<double>(), 0.0);
  EXPECT_LE(pass_figures.at("mean_abs_error").get<double>(),
            pass_figures.at("max_abs_error").get<double>());
  EXPECT_GT(pass_figures.at("correlation").get<double>(), 0.999);
  EXPECT_LE(pass_figures.at("correlation").get<double>(), 1.0);
  EXPECT_GT(pass_figures.at("error_ratio").get<double>(), 0.0);
  EXPECT_LE(pass_figures.at("error_ratio").get<double>(), 1.0);

  const nlohmann::json& failed = results[1];
  EXPECT_THAT(failed.at("reason").get<std::string>(), HasSubstr("element (b="));
  const nlohmann::json& fail_figures = failed.at("correctness");
  EXPECT_EQ(fail_figures.at("passed"), false);
  EXPECT_GT(fail_figures.at("error_ratio").get<double>(), 1.0);
  EXPECT_GT(fail_figures.at("max_abs_error").get<double>(),
            pass_figures.at("max_abs_error").get<double>());
  EXPECT_TRUE(fail_figures.at("first_failure").is_object());

  const nlohmann::json& skipped = results[2];
  EXPECT_THAT(skipped.at("reason").get<std::string>(),
              HasSubstr("no tile configuration for head_dim 80"));
  EXPECT_TRUE(skipped.at("correctness").is_null());
}

TEST_F(FuzzAttention, JunitReportHasOneTestcasePerCaseWithFailureAndSkippedElements) {
  const RunResult result = run_matrix(
      kPassFailSkip, "--plant drop_last_key_tile --junit " + quoted(path("report.xml").string()));
  ASSERT_EQ(result.exit_code, 1) << result.out << result.err;
  tinyxml2::XMLDocument document;
  ASSERT_EQ(document.LoadFile(path("report.xml").c_str()), tinyxml2::XML_SUCCESS);

  const tinyxml2::XMLElement* suites = document.FirstChildElement("testsuites");
  ASSERT_NE(suites, nullptr);
  EXPECT_EQ(suites->IntAttribute("tests"), 3);
  EXPECT_EQ(suites->IntAttribute("failures"), 1);
  EXPECT_EQ(suites->IntAttribute("skipped"), 1);
  EXPECT_EQ(suites->IntAttribute("errors"), 0);
  const tinyxml2::XMLElement* suite = suites->FirstChildElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_EQ(suite->NextSiblingElement("testsuite"), nullptr);
  EXPECT_STREQ(suite->Attribute("name"), "t");

  std::vector<const tinyxml2::XMLElement*> testcases;
  for (const tinyxml2::XMLElement* testcase = suite->FirstChildElement("testcase");
       testcase != nullptr; testcase = testcase->NextSiblingElement("testcase")) {
    testcases.push_back(testcase);
  }
  ASSERT_EQ(testcases.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_THAT(testcases[i]->Attribute("name"), StartsWith("t/" + std::to_string(i) + " "));
    EXPECT_STREQ(testcases[i]->Attribute("classname"), "cpu_flash");
  }

  EXPECT_EQ(testcases[0]->FirstChildElement("failure"), nullptr);
  EXPECT_EQ(testcases[0]->FirstChildElement("skipped"), nullptr);

  const tinyxml2::XMLElement* failure = testcases[1]->FirstChildElement("failure");
  ASSERT_NE(failure, nullptr);
  EXPECT_THAT(failure->Attribute("message"), HasSubstr("element (b="));
  ASSERT_NE(failure->GetText(), nullptr);
  EXPECT_THAT(failure->GetText(), HasSubstr("error_ratio="));
  EXPECT_EQ(testcases[1]->FirstChildElement("skipped"), nullptr);

  const tinyxml2::XMLElement* skipped = testcases[2]->FirstChildElement("skipped");
  ASSERT_NE(skipped, nullptr);
  EXPECT_THAT(skipped->Attribute("message"), HasSubstr("no tile configuration for head_dim 80"));
  EXPECT_EQ(testcases[2]->FirstChildElement("failure"), nullptr);
}

// ---- informational flags ----

// The plants --list-kernels prints under the kernel whose header line starts with `header`:
// the lines "    <name>: <effect> (<origin>)" after "  plants:", until the next kernel.
std::vector<std::string> listed_plants(const std::string& out, const std::string& header) {
  const std::vector<std::string> lines = lines_of(out);
  const auto kernel_line = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.rfind(header, 0) == 0;
  });
  if (kernel_line == lines.end()) return {"<no kernel line " + header + ">"};
  const auto plants_line = std::find(kernel_line, lines.end(), "  plants:");
  std::vector<std::string> listed;
  for (auto line = plants_line + 1; line < lines.end() && line->rfind("    ", 0) == 0; ++line) {
    listed.push_back(line->substr(4, line->find(':') - 4));
  }
  return listed;
}

std::vector<std::string> plant_names(std::span<const PlantedBug> plants) {
  std::vector<std::string> names;
  for (PlantedBug plant : plants) names.emplace_back(planted_bug_name(plant));
  return names;
}

TEST_F(
    FuzzAttention,
    ListKernelsExitsZeroAndListsCpuFlashWithEveryAlgorithmContractContainmentSpeedAndBackwardPlant) {
  const RunResult result = run("--list-kernels");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  constexpr std::string_view kAlgorithmPlants[] = {
#define ATTNFUZZ_PLANT_NAME(id, effect, origin) #id,
      ATTNFUZZ_ALGORITHM_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)      //
      ATTNFUZZ_CONTRACT_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)       //
      ATTNFUZZ_HOST_CONTRACT_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)  //
      ATTNFUZZ_CONTAINMENT_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)    //
      ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)    //
      ATTNFUZZ_BACKWARD_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)       //
      ATTNFUZZ_FP8_PLANTED_BUGS(ATTNFUZZ_PLANT_NAME)
#undef ATTNFUZZ_PLANT_NAME
  };
  const std::vector<std::string> algorithm_plants(std::begin(kAlgorithmPlants),
                                                  std::end(kAlgorithmPlants));
  EXPECT_EQ(listed_plants(result.out, "cpu_flash (host): "), algorithm_plants) << result.out;
  EXPECT_EQ(plant_names(cpu_flash_kernel().plants()), algorithm_plants);
}

TEST_F(FuzzAttention, TheBackwardMatrixPassesTheCorrectKernelAndFailsEveryBackwardPlant) {
  const std::string matrix =
      "--backend cpu --in-process --configs " +
      quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/backward.json");
  const RunResult correct = run(matrix);
  EXPECT_EQ(correct.exit_code, 0) << correct.out << correct.err;
  EXPECT_THAT(correct.out, Not(HasSubstr("SKIP"))) << "cpu_flash has a backward for each case";
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (info.detector != PlantDetector::backward) continue;
    const RunResult planted = run(matrix + " --fail-fast --plant " + std::string(info.name));
    EXPECT_EQ(planted.exit_code, 1) << info.name << "\n" << planted.out << planted.err;
    EXPECT_THAT(planted.out, HasSubstr("reason: backward pass: d")) << info.name;
  }
  // Where no case judges the backward pass, a backward plant would pass everything: refused.
  const RunResult forward_only =
      run("--configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/edges.json") +
          " --plant backward_rowsum_dropped");
  EXPECT_EQ(forward_only.exit_code, 3) << forward_only.out << forward_only.err;
  EXPECT_THAT(forward_only.err, HasSubstr("no case of this run judges the backward pass"));
  // A benchmark times forward passes only: a backward plant as its reference is refused.
  const RunResult reference =
      run("--configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/edges.json") +
          " --bench --against-plant backward_dk_unscaled");
  EXPECT_EQ(reference.exit_code, 3) << reference.out << reference.err;
  EXPECT_THAT(reference.err,
              HasSubstr("--against-plant backward_dk_unscaled: a bug of the backward pass"));
}

TEST_F(FuzzAttention, ABackwardCaseOnAKernelWithoutABackwardIsSkippedNamingWhy) {
  const RunResult result =
      run("--backend cpu --in-process --configs " +
          quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/backward.json") +
          " --kernel-lib " + quoted(std::string(ATTNFUZZ_EXAMPLE_PLUGIN)));
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("has no backward pass"));
}

TEST_F(FuzzAttention, Fp8CasesPassTheCorrectKernelAndReachAPluginOnlyWhenItDeclaresThem) {
  const std::string matrix = "--backend cpu --in-process --configs " +
                             quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/fp8.json");
  const RunResult correct = run(matrix);
  EXPECT_EQ(correct.exit_code, 0) << correct.out << correct.err;
  EXPECT_THAT(correct.out, Not(HasSubstr("SKIP")));
  // A plugin that does not declare them (the version 1 example's functions) skips them; the
  // version 4 example reads them.
  const RunResult plugin =
      run(matrix + " --kernel-lib " + quoted(std::string(ATTNFUZZ_EXAMPLE_PLUGIN)));
  EXPECT_EQ(plugin.exit_code, 2) << plugin.out << plugin.err;
  EXPECT_THAT(plugin.out, HasSubstr("does not support fp8 inputs (e4m3 or e5m2 Q, K or V"));
  const RunResult fp8_plugin =
      run(matrix + " --kernel-lib " + quoted(std::string(ATTNFUZZ_EXAMPLE_V2_PLUGIN)));
  EXPECT_EQ(fp8_plugin.exit_code, 0) << fp8_plugin.out << fp8_plugin.err;
  EXPECT_THAT(fp8_plugin.out, Not(HasSubstr("SKIP")));
}

TEST_F(FuzzAttention, AKernelThatRoundsPToFp8IsJudgedByItsDeclarationAndOnlyByIt) {
  // FlashAttention 3's fp8 path rounds P to e4m3 for its fp8 P V product: other numerics, which
  // fail undeclared and pass declared, while every other fp8 bug still fails.
  const std::string matrix = "--backend cpu --in-process --kernel cpu_flash --configs " +
                             quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/fp8.json");
  const std::string plant = matrix + " --plant fp8_p_rounded_to_e4m3";
  const RunResult undeclared = run(plant);
  EXPECT_EQ(undeclared.exit_code, 1) << undeclared.out << undeclared.err;
  // The plant rounds P to e4m3 whatever V's format: e4m3 is what it declares (`v` would say e5m2
  // for an e5m2 V, whose finer subnormals it does not keep).
  const RunResult declared =
      run(plant + " --probabilities e4m3 --json " + quoted(path("declared.json").string()));
  EXPECT_EQ(declared.exit_code, 0) << declared.out << declared.err;
  const nlohmann::json report = nlohmann::json::parse(read_file(path("declared.json")));
  EXPECT_THAT(report["environment"]["numerics"].value("declared_probabilities", ""),
              ::testing::StartsWith("e4m3 for P before P V (--probabilities)"));
  EXPECT_FALSE(report["environment"]["numerics"].contains("declared_accumulation"));
  const RunResult other_bug = run(matrix + " --plant fp8_descale_twice --probabilities v");
  EXPECT_EQ(other_bug.exit_code, 1) << other_bug.out;
  EXPECT_THAT(other_bug.out, HasSubstr("--probabilities v")) << "the replay declares it";
  const RunResult bad = run(matrix + " --probabilities fp4");
  EXPECT_EQ(bad.exit_code, 3) << bad.out;
  EXPECT_THAT(bad.err,
              HasSubstr("--probabilities: expected output (P rounded to the output dtype), "
                        "v (to V's storage dtype) or a dtype (fp16, bf16, e4m3, e5m2), "
                        "got 'fp4'"));
}

TEST_F(FuzzAttention, AKernelThatDequantizesFp8IntoTheOutputDtypeIsJudgedByItsDeclaration) {
  // vLLM's fp8 KV cache path: each element times its factor, rounded to the 16-bit dtype, before
  // the products. Other numerics than FlashAttention 3's folded factors: they fail undeclared and
  // pass declared, while every other fp8 bug still fails.
  const std::string matrix = "--backend cpu --in-process --kernel cpu_flash --configs " +
                             quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/fp8.json");
  const std::string plant = matrix + " --plant fp8_dequantized_to_output";
  const RunResult undeclared = run(plant);
  EXPECT_EQ(undeclared.exit_code, 1) << undeclared.out << undeclared.err;
  const RunResult declared =
      run(plant + " --dequantize-to output --json " + quoted(path("declared.json").string()));
  EXPECT_EQ(declared.exit_code, 0) << declared.out << declared.err;
  const nlohmann::json report = nlohmann::json::parse(read_file(path("declared.json")));
  EXPECT_THAT(report["environment"]["numerics"].value("declared_dequantization", ""),
              ::testing::StartsWith("output for fp8 inputs"));
  // The correct kernel passes under the declaration too: it is a bound, not a demand.
  EXPECT_EQ(run(matrix + " --dequantize-to output").exit_code, 0);
  const RunResult other_bug = run(matrix + " --plant fp8_k_descale_for_v --dequantize-to output");
  EXPECT_EQ(other_bug.exit_code, 1) << other_bug.out;
  EXPECT_THAT(other_bug.out, HasSubstr("--dequantize-to output")) << "the replay declares it";
  const RunResult bad = run(matrix + " --dequantize-to e4m3");
  EXPECT_EQ(bad.exit_code, 3) << bad.out;
  EXPECT_THAT(bad.err, HasSubstr("--dequantize-to: expected none"));
  EXPECT_THAT(bad.err, HasSubstr("got 'e4m3'"));
}

#if ATTNFUZZ_HAVE_CUDA
TEST_F(FuzzAttention, ListKernelsListsBothCudaKernelsAndCudaFlashCarriesTheCatalogueButHostBugs) {
  const RunResult result = run("--list-kernels");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> catalogue;
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (!info.host_only) catalogue.emplace_back(info.name);
  }
  EXPECT_EQ(listed_plants(result.out, "cuda_flash (CUDA device): "), catalogue) << result.out;
  EXPECT_THAT(result.out, HasSubstr("cuda_naive (CUDA device): "));
}

TEST_F(FuzzAttention, CudaKernelOrCudaOracleWithoutAGpuSkipsWithTheReasonAndExitsTwo) {
  if (cuda_device_status().usable) GTEST_SKIP() << "this machine has a usable GPU";
  for (const char* arguments : {"--kernel cuda_flash", "--kernel cuda_naive", "--oracle cuda"}) {
    const RunResult result = run_matrix(kTwoCases, arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.out << result.err;
    EXPECT_THAT(result.out, HasSubstr("SKIP t/0")) << arguments;
    EXPECT_THAT(result.out, ::testing::ContainsRegex("(CUDA backend|cuBLAS oracle) unavailable"))
        << arguments;
  }
}
#endif

TEST_F(FuzzAttention, HelpExitsZeroAndDescribesEveryFlagAndTheExitCodes) {
  const RunResult result = run("--help");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* flag : {"--configs", "--backend", "--oracle", "--kernel", "--plant", "--case",
                           "--json", "--junit", "--threads", "--quiet", "--list-kernels"}) {
    EXPECT_THAT(result.out, HasSubstr(flag));
  }
  EXPECT_THAT(result.out, HasSubstr("Exit codes: 0 pass, 1 a case failed, 2 nothing could run, 3"));
  // Each option with its default beside it.
  EXPECT_THAT(result.out, HasSubstr("--repeats INT=2"));
  EXPECT_THAT(result.out, HasSubstr("--max-slowdown FLOAT=0.03"));
  // A flag with a few fixed values shows them in place of its type.
  EXPECT_THAT(result.out, HasSubstr("--backend {auto,cpu,cuda}=auto"));
  EXPECT_THAT(result.out, HasSubstr("--oracle {auto,cpu,cuda}=auto"));
}

// Rows of 3000 keys in fp16, nearly flat: an accumulator kept in fp16 drifts past what fp32
// accumulation allows (the pv_fp16_accumulation plant rounds it after every 64-key tile).
constexpr const char* kLongFlatRows = R"({
  "name": "t",
  "defaults": {"batch": 1, "heads": 1, "head_dim": 64, "seq_len_q": 64, "seq_len_k": 3000,
               "data": "flat_softmax"},
  "cases": [{"seed": [1, 2]}, {"dtype": "bf16", "seq_len_k": 700, "seed": 3}]
})";

TEST_F(FuzzAttention, AKernelThatDeclaresItsAccumulatorIsJudgedByItAndOnlyByIt) {
  const std::string plant = "--kernel cpu_flash --plant pv_fp16_accumulation";
  const RunResult undeclared = run_matrix(kLongFlatRows, plant);
  EXPECT_EQ(undeclared.exit_code, 1) << undeclared.out << undeclared.err;

  const RunResult declared = run_matrix(kLongFlatRows, plant + " --accumulation input/64");
  EXPECT_EQ(declared.exit_code, 0) << declared.out << declared.err;
  EXPECT_EQ(declared.last_line(), "3 passed, 0 failed, 0 skipped");

  // A declaration of fewer roundings than the kernel makes, or of another dtype, is not kept.
  const RunResult bf16_in_fp16 = run_matrix(kLongFlatRows, plant + " --accumulation fp16/64");
  EXPECT_EQ(bf16_in_fp16.exit_code, 1) << bf16_in_fp16.out;
  EXPECT_THAT(bf16_in_fp16.out, HasSubstr("FAIL t/2"));
  EXPECT_THAT(bf16_in_fp16.out, HasSubstr("--accumulation fp16/64")) << "the replay declares it";

  // Another bug is still a bug under the declaration.
  const RunResult other_bug = run_matrix(
      kLongFlatRows, "--kernel cpu_flash --plant drop_last_key_tile --accumulation input/64");
  EXPECT_EQ(other_bug.exit_code, 1) << other_bug.out;
}

TEST_F(FuzzAttention, AReplayLineRepeatsWhatTheKernelDeclaresOfItsArithmetic) {
  const RunResult failing = run_matrix(kTwoCases,
                                       "--plant drop_last_key_tile --allow-nondeterminism "
                                       "--shape-independent-arithmetic");
  EXPECT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  EXPECT_THAT(failing.out, HasSubstr("--allow-nondeterminism --shape-independent-arithmetic"));
  const RunResult plain = run_matrix(kTwoCases, "--plant drop_last_key_tile");
  EXPECT_THAT(plain.out, Not(HasSubstr("--allow-nondeterminism")));
  EXPECT_THAT(plain.out, Not(HasSubstr("--shape-independent-arithmetic")));
}

TEST_F(FuzzAttention, AnAccumulationThatIsNotADtypeAndKeysIsAHarnessError) {
  for (const char* value : {"fp8", "fp16/0", "fp16/x"}) {
    const RunResult result = run_matrix(kTwoCases, std::string("--accumulation ") + value);
    EXPECT_EQ(result.exit_code, 3) << value;
    EXPECT_THAT(result.err, HasSubstr("--accumulation: expected fp32, or fp16, bf16 or input"))
        << value;
  }
}

TEST_F(FuzzAttention, EachChoiceTheHelpListsIsAccepted) {
  for (const char* flag : {"--backend", "--oracle"}) {
    for (const char* value : {"auto", "cpu", "cuda"}) {
      const RunResult result =
          run_matrix(kTwoCases, std::string("--list-cases ") + flag + " " + value);
      EXPECT_EQ(result.exit_code, 0) << flag << " " << value << "\n" << result.err;
    }
  }
}

TEST_F(FuzzAttention, ListCasesPrintsTheIdAndShapeOfEachCaseTheRunWouldRunAndRunsNone) {
  const RunResult all = run_matrix(kPassFailSkip, "--list-cases");
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out,
            "t/0  B=1 H=2 Sq=70 Sk=128 D=64 fp16 data=normal seed=1\n"
            "t/1  B=1 H=2 Sq=70 Sk=100 D=64 fp16 data=normal seed=1\n"
            "t/2  B=1 H=2 Sq=70 Sk=100 D=80 fp16 data=normal seed=1\n");
  // After --case and --shard, as the run would take them.
  const RunResult selected = run_matrix(kPassFailSkip, "--list-cases --case 't/[12]' --shard 2/2");
  EXPECT_EQ(selected.exit_code, 0) << selected.err;
  const RunResult whole_selection = run_matrix(kPassFailSkip, "--list-cases --case 't/[12]'");
  EXPECT_EQ(whole_selection.out,
            "t/1  B=1 H=2 Sq=70 Sk=100 D=64 fp16 data=normal seed=1\n"
            "t/2  B=1 H=2 Sq=70 Sk=100 D=80 fp16 data=normal seed=1\n");
  EXPECT_NE(selected.out, whole_selection.out) << "the shard takes part of the selection";
}

TEST_F(FuzzAttention, CasePatternsSelectEveryMatchingCaseOnceInMatrixOrder) {
  const RunResult result =
      run_matrix(kPassFailSkip, "--plant drop_last_key_tile --case 't/*' --case t/1 --case 't/?'");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_EQ(result.last_line(), "1 passed, 1 failed, 1 skipped") << "each case ran once";
  const std::size_t first = result.out.find("t/0");
  const std::size_t second = result.out.find("t/1");
  EXPECT_LT(first, second) << result.out;
}

}  // namespace
}  // namespace attnfuzz

namespace attnfuzz {
namespace {

// Every planted bug of cpu_flash makes its shipped matrix fail, through the real binary: the edge
// matrix, or for a variant's bug the variants' matrix (the edges are dense cases).
class FuzzAttentionPlant : public FuzzAttention,
                           public ::testing::WithParamInterface<PlantedBugInfo> {};

// The plants that only a variant can show, and so only variants.json catches.
constexpr PlantedBug kVariantPlants[] = {
    PlantedBug::varlen_offset_wrong_end, PlantedBug::block_table_logical_page,
    PlantedBug::window_edge_off_by_one,  PlantedBug::softcap_before_scale,
    PlantedBug::alibi_top_left,          PlantedBug::lse_log2,
    PlantedBug::block_table_rewritten,   PlantedBug::alibi_slopes_zeroed,
    PlantedBug::cu_seqlens_emptied,
};

// The plants of fp8 inputs, which only fp8.json's cases show.
constexpr PlantedBug kFp8Plants[] = {
#define ATTNFUZZ_PLANT_ID(id, effect, origin) PlantedBug::id,
    ATTNFUZZ_FP8_PLANTED_BUGS(ATTNFUZZ_PLANT_ID)
#undef ATTNFUZZ_PLANT_ID
};

std::string shipped_matrix_for(PlantedBug bug) {
  const bool variant = std::find(std::begin(kVariantPlants), std::end(kVariantPlants), bug) !=
                       std::end(kVariantPlants);
  const bool fp8 =
      std::find(std::begin(kFp8Plants), std::end(kFp8Plants), bug) != std::end(kFp8Plants);
  return std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/" +
         (fp8       ? "fp8.json"
          : variant ? "variants.json"
                    : "edges.json");
}

TEST_P(FuzzAttentionPlant, FailsItsShippedMatrixAndNamesTheFirstFailingElement) {
  if (!cpu_flash_kernel().carries(GetParam().bug)) GTEST_SKIP() << "not a cpu_flash plant";
  if (GetParam().detector != PlantDetector::comparison) {
    GTEST_SKIP() << GetParam().name << " leaves the outputs as they are: not this test's to find";
  }
  // --fail-fast: the first failing case is the finding; the rest of the matrix adds nothing.
  const RunResult result = run("--configs " + quoted(shipped_matrix_for(GetParam().bug)) +
                               " --quiet --fail-fast --plant " + std::string(GetParam().name));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  // The reason names an element or a log-sum-exp row: the first beyond its bound, the worst one
  // when only FlashAttention's rule failed (an error spread thinly over every element), or the
  // first that differs between two runs; or, for the bias test, which way the errors lean; or the
  // input the kernel changed.
  EXPECT_THAT(result.out, ::testing::ContainsRegex(
                              "reason: (nondeterministic: |.*worst )?(element|log-sum-exp of row) "
                              "\\(b=|reason: rounding bias: the errors lean|"
                              "reason: the kernel changed its input "));
  EXPECT_THAT(result.out, HasSubstr("--plant " + std::string(GetParam().name)));
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, FuzzAttentionPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnfuzz
