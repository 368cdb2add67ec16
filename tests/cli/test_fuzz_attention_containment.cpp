// SPDX-License-Identifier: BSD-3-Clause
// Bugs of a kernel's memory and time fail their cases, end to end through the real binary: a store
// far past the output or the log-sum-exp (the fences past the guard margins fault, naming the
// buffer), memory kept from call to call (a leak, told from a case that is merely large by running
// the case again alone), a kernel that never returns. The built-in plants of cpu_flash
// (kernels/planted_bug.h, ATTNFUZZ_CONTAINMENT_PLANTED_BUGS) through the matrix and the property
// search; the fault plugins (tests/plugins/) through the matrix.
// ATTNFUZZ_TEST_FUZZ_ATTENTION=<an older fuzz_attention> runs these against another build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "kernels/planted_bug.h"
#include "support/fuzz_attention_binary.h"
#include "support/scoped_environment.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// How each containment plant is shown: the matrix that reaches it, the limits that catch it and
// what its failing cases' reasons say.
struct ContainmentPlant {
  std::string_view name;
  std::string_view matrix;         // under corpus/matrix/
  std::string_view limits;         // the flags that bound a case
  std::string_view reason;         // in the property search's first failure
  std::string_view matrix_reason;  // in the matrix run's (its first case)
};

constexpr ContainmentPlant kContainmentPlants[] = {
    // The store lands past the guard margin after O however wide the case makes it (a packed
    // output's holds a sequence more): every case's faults at the fence, naming the element.
    {"output_written_far_past_end", "edges.json", "", "of the output",
     "crashed: the kernel wrote element 19583 of the output O"},
    {"lse_written_far_past_end", "variants.json", "", "of the log-sum-exp output",
     "crashed: the kernel wrote element 5895 of the log-sum-exp output"},
    {"workspace_leaked_per_call", "edges.json", "--memory-limit 1024",
     "leaks: the worker's resident memory grew by about",
     "leaks: the worker's resident memory grew by about"},
    {"hangs_on_row_without_keys", "edges.json", "--case-timeout 2",
     "hung: ", "hung: no answer within 2 s (--case-timeout)"},
};

const ContainmentPlant* containment_plant(std::string_view name) {
  const auto found =
      std::find_if(std::begin(kContainmentPlants), std::end(kContainmentPlants),
                   [&](const ContainmentPlant& plant) { return plant.name == name; });
  return found == std::end(kContainmentPlants) ? nullptr : found;
}

class ContainmentPlantRun : public FuzzAttention,
                            public ::testing::WithParamInterface<PlantedBugInfo> {
 protected:
  void SetUp() override {
    FuzzAttention::SetUp();  // the test's own folder
    if (GetParam().detector != PlantDetector::containment) {
      GTEST_SKIP() << GetParam().name << " is not a bug of memory or time";
    }
    plant_ = containment_plant(GetParam().name);
    ASSERT_NE(plant_, nullptr) << GetParam().name << " has no row in kContainmentPlants";
  }
  const ContainmentPlant* plant_ = nullptr;
};

TEST_P(ContainmentPlantRun, FailsItsShippedMatrixWithTheReasonOfItsClass) {
  const RunResult result = run(
      "--configs " +
      quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/" + std::string(plant_->matrix)) +
      " --quiet --fail-fast " + std::string(plant_->limits) + " --plant " +
      std::string(GetParam().name));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr(std::string(plant_->matrix_reason))) << result.out;
  EXPECT_THAT(result.out, HasSubstr("--plant " + std::string(GetParam().name)));
}

TEST_P(ContainmentPlantRun, FailsThePropertySearchWithTheReasonOfItsClass) {
  const RunResult result =
      run("--properties --budget 60 --property matches_oracle " + std::string(plant_->limits) +
          " --plant " + std::string(GetParam().name) + " --regressions " +
          quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL matches_oracle")) << result.out;
  // A hang found as the budget runs out is named at the budget's grace, not the case timeout.
  EXPECT_THAT(result.out, HasSubstr(std::string(plant_->reason))) << result.out;
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, ContainmentPlantRun, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(FuzzAttention, AKernelLeakingOnEveryCallFailsTheCaseThatCrossesTheLimitAndTheRun) {
  // 16 small cases; each of their calls leaks 100 MiB.
  std::string cases;
  for (int seq_len_k = 16; seq_len_k < 32; ++seq_len_k) {
    cases += std::string(cases.empty() ? "" : ", ") + R"({"seq_len_q": 8, "seq_len_k": )" +
             std::to_string(seq_len_k) + "}";
  }
  const RunResult result =
      run_matrix(R"({"name": "t", "cases": [)" + cases + "]}",
                 "--memory-limit 1024 --kernel-lib " + quoted(ATTNFUZZ_FAULT_LEAK_PER_CALL_PLUGIN));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, ::testing::ContainsRegex(
                              "leaks: the worker's resident memory grew by about [0-9]+ MiB per "
                              "case.*alone, in a fresh worker, the case passed within the limit"));
  // The innocent cases after it are not skipped for want of memory: a fresh worker takes them.
  EXPECT_THAT(result.out, Not(HasSubstr("out of memory")));
}

TEST_F(FuzzAttention, AContainmentPlantIsRefusedInProcess) {
  const RunResult result =
      run("--configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/edges.json") +
          " --in-process --plant hangs_on_row_without_keys");
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("not with --in-process"));
}

TEST_F(FuzzAttention, ACaseThatRunsOutOfMemoryAloneTooIsSkippedNotCalledALeak) {
  // Every call leaks 30 MiB (the memory grows by more than a quarter of the limit over the first
  // four cases), and the case of seq_len_k 97 allocates without end besides: run again alone, in
  // a fresh worker, it runs out of memory too, so the memory is its own.
  const ScopedEnvironment leak("FAULT_LEAK_MIB", "30");
  const RunResult result = run_matrix(
      R"({"name": "t", "cases": [{"seq_len_q": 8, "seq_len_k": 16}, {"seq_len_q": 8, "seq_len_k": 17},
          {"seq_len_q": 8, "seq_len_k": 18}, {"seq_len_q": 8, "seq_len_k": 19},
          {"seq_len_q": 8, "seq_len_k": 97}]})",
      "--memory-limit 512 --kernel-lib " + quoted(ATTNFUZZ_FAULT_UNBOUNDED_ALLOCATION_PLUGIN));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;  // four passed, one skipped
  EXPECT_THAT(result.out, HasSubstr("SKIP t/4")) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("alone, in a fresh worker: the case's own memory"))
      << result.out;
}

}  // namespace
}  // namespace attnfuzz
