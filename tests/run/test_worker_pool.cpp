// The supervisor alone, with small /bin/sh workers that speak the protocol (run/case_worker.h):
// every case ends in exactly one answer or loss; a worker that dies or hangs costs its case and a
// fresh one takes the rest; a worker that cannot start is a harness error; a handler can stop the
// run; several devices share the cases, each worker seeing its own CUDA_VISIBLE_DEVICES.
#include "run/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/harness_error.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

// A worker in sh: says it is ready, then answers {"index": N} with {"index": N, "result": {...}};
// `on_case` runs first with $n set to the index (it may kill the worker, print, or sleep).
WorkerPoolSettings shell_workers(const std::string& on_case, double timeout_seconds = 0.0) {
  const std::string script =
      "echo '{\"ready\": true}' >&3\n"
      "while read -r line; do\n"
      "  n=$(echo \"$line\" | tr -dc 0-9)\n" +
      on_case +
      "\n"
      "  echo \"{\\\"index\\\": $n, \\\"result\\\": {\\\"n\\\": $n, \\\"device\\\": "
      "\\\"${CUDA_VISIBLE_DEVICES:-none}\\\", \\\"worker\\\": $$}}\" >&3\n"
      "done\n";
  WorkerPoolSettings settings;
  settings.command = {"/bin/sh", "-c", script};
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
      settings, indices,
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
      "echo '{\"ready\": true}' >&3\n"
      "while read -r line; do\n"
      "  n=$(echo \"$line\" | tr -dc 0-9)\n"
      "  leaving=false; [ \"$n\" = 1 ] && leaving=true\n"
      "  echo \"{\\\"index\\\": $n, \\\"result\\\": {\\\"n\\\": $n, \\\"worker\\\": $$}, "
      "\\\"leaving\\\": $leaving}\" >&3\n"
      "  if $leaving; then sleep 0.3; exit 0; fi\n"
      "done\n";
  WorkerPoolSettings settings;
  settings.command = {"/bin/sh", "-c", script};
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

}  // namespace
}  // namespace attnfuzz
