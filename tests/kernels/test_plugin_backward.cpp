// SPDX-License-Identifier: BSD-3-Clause
// The backward pass through the plugin ABI (version 3): the example's backward passes every case
// of backward.json and its copy without rowsum(dO * O) fails them; plugins of versions 1 and 2 skip
// backward cases naming what they lack; a backward that changes from run to run is held to the
// first run's bits unless it declares itself nondeterministic, and is then judged run by run (a
// wrong second run still fails); a declaration its symbols contradict is refused on loading; and
// the real binary exits 0 and 1 on the two examples.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/kernel_registry.h"
#include "kernels/plugin_kernel.h"
#include "matrix/matrix_file.h"
#include "run/case_runner.h"
#include "support/fuzz_attention_binary.h"
#include "support/loaded_plugin.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

CaseResult run_on(const AttentionKernel& kernel, const AttentionCase& attention_case,
                  bool allow_nondeterminism = false) {
  RunSettings settings;
  settings.kernel = std::string(kernel.name());
  settings.allow_nondeterminism = allow_nondeterminism;
  return CaseRunner(settings).run(attention_case);
}

std::vector<AttentionCase> backward_cases() {
  return load_built_in_matrix("backward.json").cases;
}

TEST(PluginBackward, TheExamplesBackwardPassesEveryCaseOfTheBackwardMatrix) {
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_V2_PLUGIN, "example_cpu_attention_v2");
  int passed = 0;
  for (const AttentionCase& attention_case : backward_cases()) {
    const CaseResult result = run_on(example, attention_case);
    ASSERT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
    ASSERT_TRUE(result.backward.has_value()) << attention_case.id;
    ++passed;
  }
  EXPECT_GE(passed, 11);
}

TEST(PluginBackward, ItsCopyWithoutTheRowsumFailsTheBackwardMatrixInItsBackwardPass) {
  const AttentionKernel& buggy =
      plugin(ATTNFUZZ_EXAMPLE_V2_BACKWARD_BUGGY_PLUGIN, "example_cpu_attention_v2_backward_buggy");
  int failed = 0, cases = 0;
  for (const AttentionCase& attention_case : backward_cases()) {
    const CaseResult result = run_on(buggy, attention_case);
    ++cases;
    if (result.status != CaseStatus::fail) continue;
    EXPECT_THAT(result.reason, HasSubstr("backward pass: ")) << attention_case.id;
    ++failed;
  }
  ASSERT_EQ(cases, 11);
  EXPECT_EQ(failed, cases);
}

TEST(PluginBackward, APagedCaseIsSkippedWithThePluginsOwnReason) {
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_V2_PLUGIN, "example_cpu_attention_v2");
  AttentionCase paged = backward_cases().front();
  paged.page_size = 16;
  const CaseResult result = run_on(example, paged);
  EXPECT_EQ(result.status, CaseStatus::skip) << result.reason;
  EXPECT_THAT(result.reason, HasSubstr("paged K/V is forward-only in this example"));
}

TEST(PluginBackward, AVersion1Or2PluginSkipsABackwardCaseNamingVersion3) {
  // A plugin of version 1, and one of version 2's functions that declares no backward.
  for (const AttentionKernel* old :
       {&plugin(ATTNFUZZ_ABI_VERSION_1_PLUGIN, "abi_version_1"),
        &plugin(ATTNFUZZ_INPUT_WRITE_PAST_O_PLUGIN, "input_writing_attention")}) {
    const CaseResult result = run_on(*old, backward_cases().back());
    EXPECT_EQ(result.status, CaseStatus::skip) << old->name() << ": " << result.reason;
    EXPECT_THAT(result.reason, HasSubstr("has no backward pass"));
    EXPECT_THAT(result.reason, HasSubstr("ATTNFUZZ_FEATURE_BACKWARD (plugin ABI version 3)"));
  }
}

TEST(PluginBackward, APluginExportingABackwardItDoesNotDeclareSkipsBackwardCasesSayingSo) {
  // As a bridge to another language does for a function without a backward: the bit decides.
  const AttentionKernel& undeclared =
      plugin(ATTNFUZZ_BACKWARD_SYMBOLS_WITHOUT_BIT_PLUGIN, "backward_symbols_without_bit");
  const SupportVerdict verdict = undeclared.backward_support(problem_of(backward_cases().front()));
  EXPECT_FALSE(verdict.supported);
  EXPECT_THAT(verdict.reason, HasSubstr("declares no ATTNFUZZ_FEATURE_BACKWARD among its features, "
                                        "though it exports attnfuzz_plugin_backward"));
}

bool same(const attnfuzz_strides& abi, const TensorStrides& ours) {
  return abi.batch == ours.batch && abi.seq == ours.seq && abi.head == ours.head;
}

TEST(PluginBackward, TheProblemCarriesEachGradientsStridesAndWhetherToBeDeterministic) {
  AttentionProblem problem = problem_of(backward_cases().front());
  // Four tensors, four stride sets: a swap of any two shows.
  problem.q_strides = {1000, 10, 1};
  problem.k_strides = {2000, 20, 2};
  problem.v_strides = {3000, 30, 3};
  problem.o_strides = {4000, 40, 4};
  for (const bool deterministic : {true, false}) {
    const attnfuzz_backward_problem abi = abi_backward_problem_of(problem, deterministic);
    EXPECT_EQ(abi.deterministic, deterministic ? 1 : 0);
    EXPECT_TRUE(same(abi.dq_strides, problem.q_strides));
    EXPECT_TRUE(same(abi.dk_strides, problem.k_strides));
    EXPECT_TRUE(same(abi.dv_strides, problem.v_strides));
    EXPECT_TRUE(same(abi.grad_output_strides, problem.o_strides));
    const attnfuzz_problem_v2 forward = abi_problem_v2_of(problem);
    EXPECT_EQ(std::memcmp(&abi.forward, &forward, sizeof forward), 0);
  }
}

TEST(PluginBackward, ABackwardFlakyInTheLastBitFailsUnlessItDeclaresItselfNondeterministic) {
  const AttentionCase attention_case = backward_cases().front();
  const AttentionKernel& undeclared =
      plugin(ATTNFUZZ_FLAKY_BACKWARD_UNDECLARED_LAST_BIT_PLUGIN, "flaky_backward_undeclared");
  const CaseResult held = run_on(undeclared, attention_case);
  EXPECT_EQ(held.status, CaseStatus::fail) << held.reason;
  EXPECT_THAT(held.reason, HasSubstr("run 2 wrote other bits than run 1: dQ[b=0, h=0, i=0, d=0]"));
  // The same flakiness is allowed by the run's flag...
  EXPECT_EQ(run_on(undeclared, attention_case, true).status, CaseStatus::pass);
  // ...or by the kernel's own declaration.
  const AttentionKernel& declared =
      plugin(ATTNFUZZ_FLAKY_BACKWARD_DECLARED_LAST_BIT_PLUGIN, "flaky_backward_declared");
  EXPECT_FALSE(declared.backward_deterministic());
  const CaseResult judged = run_on(declared, attention_case);
  EXPECT_EQ(judged.status, CaseStatus::pass) << judged.reason;
}

TEST(PluginBackward, ANondeterministicBackwardIsStillJudgedOnEveryRun) {
  const AttentionKernel& wrong =
      plugin(ATTNFUZZ_FLAKY_BACKWARD_DECLARED_WRONG_PLUGIN, "flaky_backward_wrong");
  for (const bool allowed : {false, true}) {
    const CaseResult result = run_on(wrong, backward_cases().front(), allowed);
    EXPECT_EQ(result.status, CaseStatus::fail) << result.reason;
    EXPECT_THAT(result.reason, HasSubstr("backward pass: run 2: "));
    EXPECT_THAT(result.reason, HasSubstr("dQ"));
  }
}

TEST(PluginBackward, ADeclarationItsSymbolsContradictIsRefusedOnLoading) {
  EXPECT_THAT(load_error(ATTNFUZZ_BACKWARD_BIT_WITHOUT_SYMBOLS_PLUGIN),
              HasSubstr("declares ATTNFUZZ_FEATURE_BACKWARD but exports neither "
                        "attnfuzz_plugin_supports_backward nor attnfuzz_plugin_backward"));
  EXPECT_THAT(load_error(ATTNFUZZ_BACKWARD_ONE_SYMBOL_PLUGIN),
              HasSubstr("exports only one of version 3's attnfuzz_plugin_supports_backward and "
                        "attnfuzz_plugin_backward"));
  EXPECT_THAT(load_error(ATTNFUZZ_BACKWARD_NONDETERMINISM_ONLY_PLUGIN),
              HasSubstr("declares ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD without "
                        "ATTNFUZZ_FEATURE_BACKWARD"));
  EXPECT_EQ(find_kernel("malformed_backward"), nullptr);
}

class PluginBackwardBinary : public FuzzAttention {};

TEST_F(PluginBackwardBinary, TheBackwardMatrixPassesTheExampleAndFailsItsCopyWithoutTheRowsum) {
  const std::string matrix =
      " --configs " + quoted(std::string(ATTNFUZZ_SOURCE_DIR) + "/corpus/matrix/backward.json");
  const RunResult correct =
      run(std::string("--kernel-lib ") + quoted(ATTNFUZZ_EXAMPLE_V2_PLUGIN) + matrix);
  EXPECT_EQ(correct.exit_code, 0) << correct.out << correct.err;
  EXPECT_THAT(correct.last_line(), HasSubstr(" passed, 0 failed, 0 skipped"));
  const RunResult buggy = run(std::string("--kernel-lib ") +
                              quoted(ATTNFUZZ_EXAMPLE_V2_BACKWARD_BUGGY_PLUGIN) + matrix);
  EXPECT_EQ(buggy.exit_code, 1) << buggy.out << buggy.err;
  EXPECT_THAT(buggy.out, HasSubstr("backward pass: "));
}

}  // namespace
}  // namespace attnfuzz
