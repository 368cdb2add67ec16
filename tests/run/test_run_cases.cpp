// SPDX-License-Identifier: BSD-3-Clause
// Contained, streamed and resumable runs, end to end through the real binary: kernels that crash,
// hang or exhaust memory on one shape (tests/plugins/faulty_attention.c) cost that case only; a
// run killed with -9 keeps every finished case in its stream and --resume finishes the rest; the
// same seed and build give the same report, contained or not, on one worker or several; kernels
// that fork, start processes, close stdin, write to fd 3, call exit(0), print terminal escapes or
// crash while loading never take the run, or the machine's processes, with them.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernels/cuda_device_probe.h"
#include "support/fuzz_attention_binary.h"
#include "support/process_state.h"
#include "support/scoped_environment.h"

extern char** environ;

namespace attnfuzz {
namespace {

using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Four small cases; the faulty plugins misbehave on t/1 (seq_len_k 97) only.
constexpr const char* kFourCases = R"({
  "name": "t",
  "defaults": {"batch": 1, "heads": 2, "head_dim": 64, "seq_len_q": 70},
  "cases": [{"seq_len_k": [100, 97, 128, 130]}]
})";

// Eight cases of about a second each on two cores: long enough to kill a run in the middle.
constexpr const char* kEightSlowCases = R"({
  "name": "slow",
  "defaults": {"batch": 4, "heads": 8, "head_dim": 64},
  "matrix": {"seq_len": [400, 401, 402, 403, 404, 405, 406, 407]}
})";

json read_json(const std::filesystem::path& path) {
  return json::parse(read_file(path));
}

std::vector<json> stream_records(const std::filesystem::path& path) {
  std::vector<json> records;
  for (const std::string& line : lines_of(read_file(path))) records.push_back(json::parse(line));
  return records;
}

// The id is a view so that a call with a literal binds no temporary (GCC 13's dangling-reference).
const json& record_of(const json& report, std::string_view id) {
  for (const json& record : report.at("results")) {
    if (record.at("case_id").get_ref<const std::string&>() == id) return record;
  }
  throw std::runtime_error("no record of " + std::string(id));
}

// A report without what legitimately changes from run to run: timings, timestamps, and how the
// cases were run (the banner is not in the report; the environment names the build, not the run).
json without_timings(json report) {
  report["summary"].erase("wall_seconds");
  report["summary"].erase("started_at");
  for (json& record : report["results"]) {
    record.erase("timing");
    record.erase("timestamp");
  }
  return report;
}

TEST_F(FuzzAttention, SegfaultingKernelFailsItsCaseWithTheSignalAndItsLastOutputAndTheRunGoesOn) {
  const RunResult result =
      run_matrix(kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_SEGFAULT_PLUGIN) + " --json " +
                                 quoted(path("report.json").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  // AddressSanitizer catches the SEGV itself and exits with its own status after its report.
  EXPECT_THAT(result.out, AnyOf(HasSubstr("crashed: the worker was killed by signal 11"),
                                HasSubstr("AddressSanitizer: SEGV")));
  EXPECT_THAT(result.out, HasSubstr("| fault_segfault: seq_len_k 97, here it goes"));
  EXPECT_EQ(result.last_line(), "3 passed, 1 failed, 0 skipped");

  const json report = read_json(path("report.json"));
  EXPECT_EQ(report.at("results").size(), 4u) << "the report is whole";
  const json& crashed = record_of(report, "t/1");
  EXPECT_EQ(crashed.at("status"), "fail");
  EXPECT_THAT(crashed.at("output_tail").get<std::string>(), HasSubstr("here it goes"));
  EXPECT_EQ(record_of(report, "t/2").at("status"), "pass") << "a fresh worker took the rest";
}

TEST_F(FuzzAttention, HangingKernelIsKilledAfterTheCaseTimeoutAndTheRunGoesOn) {
  const auto started = std::chrono::steady_clock::now();
  const RunResult result = run_matrix(
      kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_HANG_PLUGIN) +
                      " --case-timeout 2 --json " + quoted(path("report.json").string()));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, HasSubstr("hung: no answer within 2 s (--case-timeout)"));
  EXPECT_THAT(result.out, HasSubstr("| fault_hang: seq_len_k 97, here it goes"));
  EXPECT_EQ(result.last_line(), "3 passed, 1 failed, 0 skipped");
  EXPECT_LT(seconds, 120.0) << "the watchdog did not stop the hang";
  const json report = read_json(path("report.json"));
  EXPECT_EQ(report.at("results").size(), 4u);
  const double hung_seconds = record_of(report, "t/1").at("timing").at("total_seconds");
  EXPECT_GE(hung_seconds, 2.0) << "a hung case lasted until the watchdog, not 0 s";
}

TEST_F(FuzzAttention, KernelThatAllocatesWithoutBoundIsSkippedAsOutOfMemory) {
  const std::string plugin = "--kernel-lib " + quoted(ATTNFUZZ_FAULT_UNBOUNDED_ALLOCATION_PLUGIN);
  const RunResult result = run_matrix(
      kFourCases, plugin + " --memory-limit 768 --json " + quoted(path("report.json").string()));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("SKIP t/1"));
  EXPECT_THAT(result.out, HasSubstr("out of memory: the worker's processes reached"));
  EXPECT_THAT(result.out, HasSubstr("past the limit of 768 MiB (--memory-limit)"));
  EXPECT_EQ(result.last_line(), "3 passed, 0 failed, 1 skipped");
  const json report = read_json(path("report.json"));
  EXPECT_EQ(record_of(report, "t/1").at("skip_cause"), "unavailable");

  // It could not run here: --fail-on-skip makes that a failed run.
  const RunResult strict = run_matrix(kFourCases, plugin + " --memory-limit 768 --fail-on-skip");
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  EXPECT_THAT(strict.out, HasSubstr("--fail-on-skip: 1 case(s) could not run here"));
}

#ifdef ATTNFUZZ_FAULT_ILLEGAL_ADDRESS_PLUGIN
TEST_F(FuzzAttention, IllegalAddressOnTheGpuFailsItsCaseAndAFreshContextRunsTheRest) {
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  const RunResult result =
      run_matrix(kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_ILLEGAL_ADDRESS_PLUGIN));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, HasSubstr("illegal"));
  EXPECT_EQ(result.last_line(), "3 passed, 1 failed, 0 skipped")
      << "the cases after the sticky error ran in a fresh worker, not skipped\n"
      << result.out << result.err;
}
#endif

TEST_F(FuzzAttention, FailOnSkipFailsCasesThatCouldNotRunButNotUnsupportedShapes) {
  constexpr const char* kHeadDim80 =
      R"({"name": "t", "cases": [{"batch": 1, "heads": 2, "seq_len": 70, "head_dim": 80}]})";
  const RunResult unsupported = run_matrix(kHeadDim80, "--fail-on-skip");
  EXPECT_EQ(unsupported.exit_code, 2) << unsupported.out << unsupported.err;
  if (cuda_device_status().usable) GTEST_SKIP() << "this machine has a usable GPU";
  const RunResult no_gpu = run_matrix(kFourCases, "--backend cuda --fail-on-skip");
  EXPECT_EQ(no_gpu.exit_code, 1) << no_gpu.out << no_gpu.err;
  EXPECT_THAT(no_gpu.out, HasSubstr("--fail-on-skip: 4 case(s) could not run here"));
}

// Starts fuzz_attention in the background; returns its pid.
pid_t spawn_fuzz_attention(const std::vector<std::string>& arguments,
                           const std::filesystem::path& log) {
  std::vector<std::string> words = {fuzz_attention_path(), "--backend", "cpu"};  // as run()
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// Waits up to `seconds` for `path` to hold a pid; 0 if it never does.
long wait_for_pid_in(const std::filesystem::path& path, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream file(path);
    long pid = 0;
    if (file >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

TEST_F(FuzzAttention, KernelThatForksThenCrashesIsACrashAtOnceEvenWithoutATimeout) {
  const auto started = std::chrono::steady_clock::now();
  const RunResult result = run_matrix(
      kFourCases, "--case-timeout 0 --kernel-lib " + quoted(ATTNFUZZ_FAULT_FORK_THEN_CRASH_PLUGIN));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL t/1"));
  EXPECT_THAT(result.out, AnyOf(HasSubstr("crashed: the worker was killed by signal 11"),
                                HasSubstr("AddressSanitizer: SEGV")));
  EXPECT_EQ(result.last_line(), "3 passed, 1 failed, 0 skipped");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
            120.0);
}

TEST_F(FuzzAttention, ProcessesAKernelStartsDoNotOutliveTheRun) {
  const ScopedEnvironment pid_file("FAULT_PID_FILE", path("orphan.pid").string());
  const RunResult result =
      run_matrix(kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_ORPHAN_PLUGIN));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const long orphan = wait_for_pid_in(path("orphan.pid"), 1.0);
  ASSERT_GT(orphan, 0) << "the plugin started no process";
  EXPECT_TRUE(gone_within(orphan, 10.0)) << "process " << orphan << " outlived the run";
}

TEST_F(FuzzAttention, ProcessesAKernelStartsDoNotOutliveAHarnessKilledWithSigkill) {
  const ScopedEnvironment pid_file("FAULT_PID_FILE", path("orphan.pid").string());
  const std::filesystem::path matrix = write("orphan.json", R"({"name": "o", "cases": [
    {"batch": 1, "heads": 2, "seq_len_q": 70, "seq_len_k": 97},
    {"batch": 4, "heads": 8, "seq_len": [400, 401, 402, 403, 404, 405]}]})");
  const pid_t pid = spawn_fuzz_attention(
      {"--configs", matrix.string(), "--kernel-lib", ATTNFUZZ_FAULT_ORPHAN_PLUGIN, "--quiet"},
      path("run.log"));
  ASSERT_GT(pid, 0);
  const long orphan = wait_for_pid_in(path("orphan.pid"), 120.0);
  ASSERT_GT(orphan, 0) << read_file(path("run.log"));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed";
  EXPECT_TRUE(gone_within(orphan, 10.0)) << "process " << orphan << " outlived the harness";
}

// Kernels that touch descriptors the worker protocol once used: nothing of theirs reaches it.
TEST_F(FuzzAttention, KernelThatClosesStdinOrWritesToFd3CostsNoCase) {
  for (const char* plugin : {ATTNFUZZ_FAULT_CLOSE_STDIN_PLUGIN, ATTNFUZZ_FAULT_WRITE_FD3_PLUGIN}) {
    const RunResult result = run_matrix(kFourCases, "--kernel-lib " + quoted(plugin));
    EXPECT_EQ(result.exit_code, 0) << plugin << "\n" << result.out << result.err;
    EXPECT_EQ(result.last_line(), "4 passed, 0 failed, 0 skipped") << plugin;
  }
}

TEST_F(FuzzAttention, KernelThatCallsExitZeroFailsItsCaseContainedOrNot) {
  const std::string plugin = "--kernel-lib " + quoted(ATTNFUZZ_FAULT_EXIT_ZERO_PLUGIN);
  const RunResult contained = run_matrix(kFourCases, plugin);
  EXPECT_EQ(contained.exit_code, 1) << contained.out << contained.err;
  EXPECT_THAT(contained.out, HasSubstr("crashed: the worker exited with status 0"));
  EXPECT_EQ(contained.last_line(), "3 passed, 1 failed, 0 skipped");

  const RunResult in_process = run_matrix(kFourCases, plugin + " --in-process");
  EXPECT_EQ(in_process.exit_code, 1) << in_process.out << in_process.err;
  EXPECT_THAT(in_process.err, HasSubstr("the kernel called exit() while running case t/1"));
}

TEST_F(FuzzAttention, ControlCharactersOfAKernelsMessageNeverReachTheTableOrMarkdownRaw) {
  const RunResult result =
      run_matrix(kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_CONTROL_CHARACTERS_PLUGIN) +
                                 " --markdown " + quoted(path("summary.md").string()) + " --json " +
                                 quoted(path("report.json").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  // Escaped where the message enters the harness: one line, in every report.
  const std::string escaped = R"(bad\u001b[2J\u001b[31m red\rover\u0007 bell\nFAIL forged/0)";
  EXPECT_THAT(result.out, HasSubstr(escaped));
  EXPECT_EQ(record_of(read_json(path("report.json")), "t/1").at("reason").get<std::string>(),
            "kernel fault_control_characters failed: plugin returned status 1: " + escaped);
  for (const std::string& line : lines_of(result.out)) {
    EXPECT_NE(line.rfind("FAIL forged", 0), 0u) << "a message forged a row of the table";
  }
  for (const std::string& text : {result.out, read_file(path("summary.md"))}) {
    for (const char control : {'\033', '\r', '\a'}) {
      EXPECT_EQ(text.find(control), std::string::npos) << "control character " << int(control);
    }
  }
}

TEST_F(FuzzAttention, ControlCharactersOfAReplayedFilesNameNeverReachTheTableRaw) {
  // A case id is its file's name, which may hold terminal escapes and a bell.
  std::filesystem::create_directories(path("saved"));
  write("saved/evil\033[2J\a.json", R"({"name": "c", "cases": [{"seq_len": 70}]})");
  const RunResult result =
      run("--replay " + quoted(path("saved").string()) + " --plant output_truncation");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL evil?[2J?.json/0"));
  for (const char control : {'\033', '\a'}) {
    EXPECT_EQ(result.out.find(control), std::string::npos) << "control character " << int(control);
  }
}

TEST_F(FuzzAttention, PluginThatCrashesWhileLoadingIsAHarnessErrorNamingTheFile) {
  const RunResult result =
      run_matrix(kFourCases, "--kernel-lib " + quoted(ATTNFUZZ_FAULT_LOAD_CRASH_PLUGIN));
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr(ATTNFUZZ_FAULT_LOAD_CRASH_PLUGIN));
  EXPECT_THAT(result.err, AnyOf(HasSubstr("killed by signal 11"), HasSubstr("SEGV")));
  EXPECT_THAT(result.out, Not(HasSubstr(" passed, ")));
}

// The faulty plugins misbehave on every case while FAULT_EVERY_CASE is set (the property
// search's cases are random; seq_len_k 97 would be rare).
TEST_F(FuzzAttention, PropertySearchOnACrashingKernelFailsSavesTheMinimalCaseAndSummarizes) {
  const ScopedEnvironment everywhere("FAULT_EVERY_CASE", "1");
  const RunResult result =
      run("--properties --budget 10 --property matches_oracle --property determinism "
          "--kernel-lib " +
          quoted(ATTNFUZZ_FAULT_SEGFAULT_PLUGIN) + " --regressions " +
          quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL property matches_oracle"));
  EXPECT_THAT(result.out, AnyOf(HasSubstr("crashed: the worker was killed by signal 11"),
                                HasSubstr("AddressSanitizer: SEGV")));
  EXPECT_EQ(result.last_line(), "0 passed, 2 failed, 0 skipped");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(path("regressions")),
                          std::filesystem::directory_iterator()),
            2);
}

TEST_F(FuzzAttention, PropertySearchStopsAHangingKernelWithinItsBudget) {
  const ScopedEnvironment everywhere("FAULT_EVERY_CASE", "1");
  const auto started = std::chrono::steady_clock::now();
  const RunResult result = run("--properties --budget 3 --property matches_oracle --kernel-lib " +
                               quoted(ATTNFUZZ_FAULT_HANG_PLUGIN) + " --regressions " +
                               quoted(path("regressions").string()));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
            60.0);
  // A check that runs on past the budget by its grace (here 10 s) is a hang: a
  // hanging kernel is never passed for want of a --case-timeout below the budget.
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("hung: the kernel was still running a check"));
  EXPECT_THAT(result.out, HasSubstr("FAIL matches_oracle"));

  const RunResult with_timeout =
      run("--properties --budget 30 --case-timeout 1 --property matches_oracle --kernel-lib " +
          quoted(ATTNFUZZ_FAULT_HANG_PLUGIN) + " --regressions " +
          quoted(path("regressions").string()));
  EXPECT_EQ(with_timeout.exit_code, 1) << with_timeout.out << with_timeout.err;
  // Each hang is named at the case timeout, which is shorter than any grace past the budget.
  EXPECT_THAT(with_timeout.out, HasSubstr("hung: no answer within 1 s (--case-timeout)"));
  EXPECT_THAT(with_timeout.out, Not(HasSubstr("the kernel was still running")));
}

TEST_F(FuzzAttention, PropertiesNeverCheckedAreSkippedNotPassed) {
  // --fail-fast stops the search at the first failing property: the others were never checked.
  const RunResult result =
      run("--properties --budget 30 --fail-fast --plant causal_off_by_one --regressions " +
          quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("(not run: --fail-fast stopped first)"));
  EXPECT_THAT(result.last_line(),
              ::testing::MatchesRegex("[0-9]+ passed, 1 failed, [1-9][0-9]* skipped"));
  for (const std::string& line : lines_of(result.out)) {
    EXPECT_FALSE(line.rfind("PASS", 0) == 0 && line.find(" 0 cases") != std::string::npos) << line;
  }
}

TEST_F(FuzzAttention, PropertiesWhoseCasesAllSkippedAreSkippedNotPassedAndTheRunExitsTwo) {
  if (cuda_device_status().usable) GTEST_SKIP() << "this machine has a usable GPU";
  // Without a GPU every case of a CUDA kernel is skipped: not one property has been judged.
  const RunResult result = run("--properties --budget 3 --kernel cuda_flash --regressions " +
                               quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("(not judged: no case of it could run here"));
  EXPECT_THAT(result.last_line(),
              ::testing::MatchesRegex("0 passed, 0 failed, [1-9][0-9]* skipped"));

  // A replay judges nothing either: each property of the case is a SKIP, not a PASS.
  const std::filesystem::path saved =
      write("saved.json", R"({"name": "c", "cases": [{"seq_len_q": 7, "seq_len_k": 9}]})");
  const RunResult replay = run("--properties --replay " + quoted(saved.string()) +
                               " --property matches_oracle --property determinism "
                               "--kernel cuda_flash");
  EXPECT_EQ(replay.exit_code, 2) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("SKIP matches_oracle saved.json/0"));
  EXPECT_EQ(replay.last_line(), "0 passed, 0 failed, 2 skipped");
}

TEST_F(FuzzAttention, PropertyReplayOfACaseThatCrashesTheKernelFailsContained) {
  const std::filesystem::path saved =
      write("crash.json", R"({"name": "c", "cases": [{"seq_len_q": 70, "seq_len_k": 97}]})");
  const RunResult result =
      run("--properties --property matches_oracle --replay " + quoted(saved.string()) +
          " --kernel-lib " + quoted(ATTNFUZZ_FAULT_SEGFAULT_PLUGIN));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL matches_oracle crash.json/0"));
  EXPECT_EQ(result.last_line(), "0 passed, 1 failed, 0 skipped");
}

TEST_F(FuzzAttention, KilledRunKeepsEveryFinishedCaseInItsStreamAndResumeFinishesTheRest) {
  const std::filesystem::path matrix = write("slow.json", kEightSlowCases);
  const std::filesystem::path stream = path("run.jsonl");
  const pid_t pid = spawn_fuzz_attention(
      {"--configs", matrix.string(), "--stream", stream.string(), "--quiet"}, path("first.log"));
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  const auto streamed_lines = [&] {
    return std::filesystem::exists(stream) ? lines_of(read_file(stream)).size() : 0;
  };
  while (streamed_lines() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "the run ended before it was killed: " << read_file(path("first.log"));

  const std::vector<json> kept = stream_records(stream);
  ASSERT_GE(kept.size(), 2u);
  ASSERT_LT(kept.size(), 8u) << "killed too late to test anything";
  for (const json& record : kept) EXPECT_EQ(record.at("status"), "pass");

  const RunResult resumed =
      run("--configs " + quoted(matrix.string()) + " --resume " + quoted(stream.string()) +
          " --json " + quoted(path("report.json").string()));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resumed " + std::to_string(kept.size()) +
                                     " finished cases from " + stream.string()));
  for (const json& record : kept) {
    EXPECT_THAT(resumed.out,
                Not(HasSubstr("PASS " + record.at("case_id").get<std::string>() + " ")))
        << "a finished case ran again";
  }
  EXPECT_EQ(resumed.last_line(), "8 passed, 0 failed, 0 skipped");
  const json report = read_json(path("report.json"));
  EXPECT_EQ(report.at("results").size(), 8u);
  std::set<std::string> streamed;
  for (const json& record : stream_records(stream)) {
    EXPECT_TRUE(streamed.insert(record.at("case_id")).second) << record.at("case_id");
  }
  EXPECT_EQ(streamed.size(), 8u);
}

TEST_F(FuzzAttention, ResumeCutsAPartialLastLineAndAppendsAfterIt) {
  const RunResult first =
      run_matrix(kFourCases, "--case t/0 --stream " + quoted(path("run.jsonl").string()));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  // A kill in the middle of writing the second record.
  std::ofstream(path("run.jsonl"), std::ios::app) << R"({"case_id":"t/1","kernel_na)";

  const RunResult resumed =
      run_matrix(kFourCases, "--resume " + quoted(path("run.jsonl").string()));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resumed 1 finished cases"));
  EXPECT_EQ(resumed.last_line(), "4 passed, 0 failed, 0 skipped");
  EXPECT_EQ(stream_records(path("run.jsonl")).size(), 4u) << "every line parses";
}

TEST_F(FuzzAttention, ResumeRefusesAStreamOfAnotherRun) {
  const std::string stream = quoted(path("run.jsonl").string());
  ASSERT_EQ(run_matrix(kFourCases, "--case t/0 --stream " + stream).exit_code, 0);
  const RunResult other_plant =
      run_matrix(kFourCases, "--resume " + stream + " --plant drop_last_key_tile");
  EXPECT_EQ(other_plant.exit_code, 3);
  EXPECT_THAT(other_plant.err,
              HasSubstr("ran case t/0 on kernel cpu_flash with plant none; this run "
                        "uses cpu_flash with plant drop_last_key_tile"));
  const RunResult other_matrix = run_matrix(
      R"({"name": "t", "cases": [{"batch": 2, "heads": 2, "seq_len": 70}]})", "--resume " + stream);
  EXPECT_EQ(other_matrix.exit_code, 3);
  EXPECT_THAT(other_matrix.err, HasSubstr("case t/0 was run with another configuration"));
  const RunResult missing =
      run_matrix(kFourCases, "--resume " + quoted(path("none.jsonl").string()));
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr("--resume: no such file"));
}

TEST_F(FuzzAttention, SameSeedAndBuildGiveTheSameReportExceptTimingsHoweverTheCasesRun) {
  const std::string matrix = R"({
    "name": "t",
    "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 64},
    "cases": [{"seq_len_q": [1, 97], "seq_len_k": [113, 203], "causal": [false, true],
               "data": ["normal", "large_scores"]}]
  })";
  auto report_of = [&](const std::string& name, const std::string& more, int exit_code = 0) {
    const RunResult result =
        run_matrix(matrix, "--quiet --json " + quoted(path(name).string()) + " " + more);
    EXPECT_EQ(result.exit_code, exit_code) << result.out << result.err;
    return without_timings(read_json(path(name)));
  };
  const json first = report_of("first.json", "");
  ASSERT_EQ(first.at("results").size(), 16u);
  EXPECT_EQ(report_of("second.json", ""), first);
  EXPECT_EQ(report_of("in_process.json", "--in-process"), first);
  EXPECT_EQ(report_of("two_workers.json", "--devices 0,1"), first);
  const json planted = report_of("planted_a.json", "--plant causal_off_by_one", 1);
  EXPECT_EQ(planted.at("summary").at("failed"), 4) << "the causal cases with seq_len_q 97";
  EXPECT_EQ(report_of("planted_b.json", "--plant causal_off_by_one --devices 0,1", 1), planted);
}

TEST_F(FuzzAttention, DevicesRunOneWorkerPerListedGpu) {
  const RunResult result = run_matrix(kFourCases, "--devices 0,1");
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("2 worker process(es)"));
  EXPECT_EQ(result.last_line(), "4 passed, 0 failed, 0 skipped");
}

TEST_F(FuzzAttention, BadContainmentFlagsAreHarnessErrors) {
  EXPECT_THAT(run_matrix(kFourCases, "--devices 0,,1").err,
              HasSubstr("--devices: expected GPU indices separated by commas"));
  EXPECT_THAT(run_matrix(kFourCases, "--case-timeout -1").err,
              HasSubstr("--case-timeout: must be from 0 (no limit)"));
  EXPECT_THAT(run_matrix(kFourCases, "--memory-limit -5").err,
              HasSubstr("--memory-limit: must be from 0"));
  EXPECT_EQ(run_matrix(kFourCases, "--devices x").exit_code, 3);
}

}  // namespace
}  // namespace attnfuzz
