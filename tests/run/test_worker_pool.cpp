// SPDX-License-Identifier: BSD-3-Clause
// The supervisor alone, with small /bin/sh workers that speak the protocol (run/case_worker.h):
// every case ends in exactly one answer or loss; a worker that dies or hangs costs its case and a
// fresh one takes the rest; a worker that cannot start is a harness error; a handler can stop the
// run; several devices share the cases, each worker seeing its own CUDA_VISIBLE_DEVICES; a death
// is seen on the process even while a child holds its pipes, and what a worker started dies with
// it; garbage on the answer channel costs one case; a case is blamed only once started; the memory
// of a worker's children counts.
#include "run/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/harness_error.h"
#include "support/process_state.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// The protocol in sh: the descriptors from ATTNFUZZ_WORKER_FDS, `say` for an answer line.
constexpr const char* kShellProtocol =
    "R=${ATTNFUZZ_WORKER_FDS%,*}; W=${ATTNFUZZ_WORKER_FDS#*,}\n"
    "say() { echo \"$1\" >&$W; }\n";

// A worker in sh: says it is ready, then answers {"index": N} with {"started": N} and
// {"index": N, "result": {...}}; `before_start` runs before it says it started the case, `on_case`
// after, each with $n set to the index (it may kill the worker, print, or sleep).
WorkerPoolSettings shell_workers(const std::string& on_case, double timeout_seconds = 0.0,
                                 const std::string& before_start = "") {
  const std::string script =
      std::string(kShellProtocol) +
      "say '{\"ready\": true}'\n"
      "while read -r line <&$R; do\n"
      "  n=$(echo \"$line\" | tr -dc 0-9)\n" +
      before_start +
      "\n"
      "  say \"{\\\"started\\\": $n}\"\n" +
      on_case +
      "\n"
      "  say \"{\\\"index\\\": $n, \\\"result\\\": {\\\"n\\\": $n, \\\"device\\\": "
      "\\\"${CUDA_VISIBLE_DEVICES:-none}\\\", \\\"worker\\\": $$}}\"\n"
      "done\n";
  WorkerPoolSettings settings;
  settings.command = {"/bin/bash", "-c", script};
  settings.case_timeout_seconds = timeout_seconds;
  return settings;
}

struct Outcomes {
  std::map<std::size_t, nlohmann::json> answers;
  std::map<std::size_t, WorkerLoss> losses;
  int calls = 0;
};

Outcomes run(const WorkerPoolSettings& settings, std::size_t cases, int stop_after = -1) {
  Outcomes outcomes;
  std::vector<std::size_t> indices;
  for (std::size_t index = 0; index < cases; ++index) indices.push_back(index);
  run_on_workers(
      settings, indices, [](std::size_t) { return nlohmann::json::object(); },
      [&](std::size_t index, const nlohmann::json& record) {
        EXPECT_TRUE(outcomes.answers.emplace(index, record).second) << "answered twice: " << index;
        return ++outcomes.calls != stop_after;
      },
      [&](std::size_t index, const WorkerLoss& loss) {
        EXPECT_TRUE(outcomes.losses.emplace(index, loss).second) << "lost twice: " << index;
        return ++outcomes.calls != stop_after;
      });
  return outcomes;
}

TEST(WorkerPool, EveryCaseIsAnsweredOnceInOneWorker) {
  const Outcomes outcomes = run(shell_workers(""), 5);
  ASSERT_EQ(outcomes.answers.size(), 5u);
  EXPECT_TRUE(outcomes.losses.empty());
  for (const auto& [index, record] : outcomes.answers) EXPECT_EQ(record.at("n"), index);
  EXPECT_EQ(outcomes.answers.at(0).at("worker"), outcomes.answers.at(4).at("worker"));
}

TEST(WorkerPool, AWorkerThatDiesCostsItsCaseAndAFreshWorkerTakesTheRest) {
  const Outcomes outcomes =
      run(shell_workers("  if [ \"$n\" = 2 ]; then echo 'about to die' >&2; kill -SEGV $$; fi"), 5);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  const WorkerLoss& loss = outcomes.losses.at(2);
  EXPECT_EQ(loss.kind, WorkerLossKind::crashed);
  EXPECT_THAT(loss.description, HasSubstr("killed by signal 11"));
  EXPECT_EQ(loss.output_tail, "about to die");
  ASSERT_EQ(outcomes.answers.size(), 4u);
  EXPECT_NE(outcomes.answers.at(1).at("worker"), outcomes.answers.at(3).at("worker"));
}

TEST(WorkerPool, ALostCasesOutputKeepsItsStartAndItsEndWhenAFloodFillsTheMiddle) {
  // The kernel's own words come first; a sanitizer's long report, then its summary, last.
  const Outcomes outcomes =
      run(shell_workers("  if [ \"$n\" = 0 ]; then echo 'first words' >&2; "
                        "for i in $(seq 2000); do echo \"frame $i of a long report\" >&2; done; "
                        "echo 'SUMMARY: the end' >&2; kill -SEGV $$; fi"),
          1);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  const std::string& output = outcomes.losses.at(0).output_tail;
  EXPECT_THAT(output, ::testing::StartsWith("first words\n"));
  EXPECT_THAT(output, HasSubstr("\n...\n"));
  EXPECT_THAT(output, ::testing::EndsWith("SUMMARY: the end"));
  EXPECT_LT(output.size(), 6000u);
}

TEST(WorkerPool, AWorkerThatExitsMidCaseIsACrashWithItsStatus) {
  const Outcomes outcomes = run(shell_workers("  if [ \"$n\" = 0 ]; then exit 7; fi"), 2);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_THAT(outcomes.losses.at(0).description, HasSubstr("exited with status 7"));
  EXPECT_EQ(outcomes.answers.size(), 1u);
}

TEST(WorkerPool, AWorkerThatSaysItLeavesGetsNoFurtherCaseAndAFreshWorkerTakesTheRest) {
  // As a worker whose CUDA context was lost: it answers case 1 with "leaving" and exits a little
  // later. Sent case 2 in that gap, it would exit with case 2 unanswered (a false crash).
  const std::string script =
      std::string(kShellProtocol) +
      "say '{\"ready\": true}'\n"
      "while read -r line <&$R; do\n"
      "  n=$(echo \"$line\" | tr -dc 0-9)\n"
      "  say \"{\\\"started\\\": $n}\"\n"
      "  leaving=false; [ \"$n\" = 1 ] && leaving=true\n"
      "  say \"{\\\"index\\\": $n, \\\"result\\\": {\\\"n\\\": $n, \\\"worker\\\": $$}, "
      "\\\"leaving\\\": $leaving}\"\n"
      "  if $leaving; then sleep 0.3; exit 0; fi\n"
      "done\n";
  WorkerPoolSettings settings;
  settings.command = {"/bin/bash", "-c", script};
  const Outcomes outcomes = run(settings, 4);
  EXPECT_TRUE(outcomes.losses.empty()) << outcomes.losses.begin()->second.description;
  ASSERT_EQ(outcomes.answers.size(), 4u);
  EXPECT_EQ(outcomes.answers.at(0).at("worker"), outcomes.answers.at(1).at("worker"));
  EXPECT_NE(outcomes.answers.at(1).at("worker"), outcomes.answers.at(2).at("worker"));
}

TEST(WorkerPool, AHangIsKilledAtTheTimeoutAndTheRestRun) {
  const Outcomes outcomes = run(shell_workers("  if [ \"$n\" = 1 ]; then sleep 600; fi", 0.5), 3);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_EQ(outcomes.losses.at(1).kind, WorkerLossKind::hung);
  EXPECT_THAT(outcomes.losses.at(1).description, HasSubstr("no answer within 0.5 s"));
  EXPECT_GE(outcomes.losses.at(1).seconds, 0.5) << "a hang's duration is how long it ran";
  EXPECT_LT(outcomes.losses.at(1).seconds, 60.0);
  EXPECT_EQ(outcomes.answers.size(), 2u);
}

TEST(WorkerPool, AWorkerThatCannotStartIsAHarnessError) {
  WorkerPoolSettings settings;
  settings.command = {"/bin/sh", "-c", "echo 'no such kernel' >&2; exit 3"};
  try {
    run(settings, 2);
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("failed to start: it exited with status 3"));
    EXPECT_THAT(error.what(), HasSubstr("no such kernel"));
  }
}

TEST(WorkerPool, AHandlerThatSaysStopStartsNoFurtherCase) {
  const Outcomes outcomes = run(shell_workers(""), 6, /*stop_after=*/2);
  EXPECT_EQ(outcomes.calls, 2);
}

TEST(WorkerPool, DevicesShareTheCasesEachWorkerSeeingItsOwnGpu) {
  WorkerPoolSettings settings = shell_workers("  sleep 0.05");
  settings.devices = {"0", "1"};
  const Outcomes outcomes = run(settings, 10);
  ASSERT_EQ(outcomes.answers.size(), 10u);
  std::map<std::string, int> cases_per_device;
  for (const auto& [index, record] : outcomes.answers) ++cases_per_device[record.at("device")];
  EXPECT_EQ(cases_per_device.size(), 2u);
  EXPECT_GT(cases_per_device["0"], 0);
  EXPECT_GT(cases_per_device["1"], 0);
}

// The pid a worker's shell wrote into `path`.
long pid_in(const std::filesystem::path& path) {
  std::ifstream file(path);
  long pid = 0;
  file >> pid;
  return pid;
}

class WorkerPoolFiles : public TemporaryFolder {};

TEST_F(WorkerPoolFiles, AWorkerThatCrashesWhileItsChildHoldsThePipesIsACrashNotAHang) {
  // The child keeps the worker's answer pipe and output open: the death is seen on the process,
  // at once, even with no case timeout; the child is killed with the worker's group.
  const std::string child_pid = path("child.pid").string();
  const auto started = std::chrono::steady_clock::now();
  const Outcomes outcomes = run(shell_workers("  if [ \"$n\" = 1 ]; then sleep 600 & echo $! > '" +
                                              child_pid + "'; kill -SEGV $$; fi"),
                                3);
  EXPECT_LT(seconds_since(started), 30.0);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_EQ(outcomes.losses.at(1).kind, WorkerLossKind::crashed);
  EXPECT_THAT(outcomes.losses.at(1).description, HasSubstr("killed by signal 11"));
  EXPECT_EQ(outcomes.answers.size(), 2u);
  EXPECT_TRUE(gone_within(pid_in(child_pid), 10.0));
}

TEST_F(WorkerPoolFiles, WhatAWorkerStartedIsKilledWhenItExitsNormally) {
  const std::string child_pid = path("child.pid").string();
  const Outcomes outcomes = run(
      shell_workers("  if [ \"$n\" = 0 ]; then sleep 600 >/dev/null 2>&1 </dev/null & echo $! > '" +
                    child_pid + "'; fi"),
      2);
  EXPECT_EQ(outcomes.answers.size(), 2u);
  EXPECT_TRUE(gone_within(pid_in(child_pid), 10.0));
}

TEST(WorkerPool, AnAnswerChannelCarryingGarbageCostsTheCaseNotTheRun) {
  const Outcomes outcomes = run(shell_workers("  if [ \"$n\" = 1 ]; then say 'GARBAGE'; fi"), 3);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_EQ(outcomes.losses.at(1).kind, WorkerLossKind::crashed);
  EXPECT_THAT(outcomes.losses.at(1).description, HasSubstr("not an answer (\"GARBAGE\")"));
  EXPECT_EQ(outcomes.answers.size(), 2u);
}

TEST(WorkerPool, ACaseIsBlamedOnlyOnceAWorkerStartedItAndIsRetriedOtherwise) {
  // Case 1's workers die before they say they started it: it is tried kMaxCaseStarts times, then
  // lost saying so; the other cases are not blamed.
  const Outcomes outcomes = run(shell_workers("", 0.0, "  if [ \"$n\" = 1 ]; then exit 9; fi"), 3);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_THAT(outcomes.losses.at(1).description, HasSubstr("exited with status 9"));
  EXPECT_THAT(outcomes.losses.at(1).description,
              HasSubstr(std::to_string(kMaxCaseStarts) + " workers in a row"));
  EXPECT_EQ(outcomes.answers.size(), 2u);
}

TEST(WorkerPool, MemoryOfTheProcessesAWorkerStartsCountsAgainstItsLimit) {
  // `tail` keeps a 400 MB line without a newline in memory: the worker's child, not the worker.
  WorkerPoolSettings settings = shell_workers(
      "  if [ \"$n\" = 0 ]; then head -c 400000000 /dev/zero | tail -n 1 >/dev/null; fi", 60.0);
  settings.memory_limit_bytes = std::int64_t{150} << 20;
  const Outcomes outcomes = run(settings, 2);
  ASSERT_EQ(outcomes.losses.size(), 1u);
  EXPECT_EQ(outcomes.losses.at(0).kind, WorkerLossKind::out_of_memory);
  EXPECT_EQ(outcomes.answers.size(), 1u);
}

}  // namespace
}  // namespace attnfuzz
