// SPDX-License-Identifier: BSD-3-Clause
// Python functions as kernels (fuzz_attention --kernel-py, bridges/python/), end to end through the
// real binary with numpy: a correct float64 reference (tests/python/reference_attention.py) passes
// the edge and variant matrices and its backward the backward matrix; each of its planted bugs
// fails one of them, as its C twin does (gqa_modulo through the property search's bound form too);
// a function that raises, returns the wrong thing, declares what it cannot or cannot be loaded is
// named, case by case or with exit 3. Skipped without the bridge or without the environment of
// scripts/python_env.sh (or ATTNFUZZ_TEST_PYTHON's interpreter).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/fuzz_attention_binary.h"
#include "support/scoped_environment.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

const std::string kSourceDir = ATTNFUZZ_SOURCE_DIR;
const std::string kReference = kSourceDir + "/tests/python/reference_attention.py";
const std::string kMisbehaving = kSourceDir + "/tests/python/misbehaving_kernels.py";

std::string test_python() {
  const char* chosen = std::getenv("ATTNFUZZ_TEST_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen
                                              : kSourceDir + "/build-tools/python/bin/python";
}

std::string matrix(const std::string& name) {
  return quoted(kSourceDir + "/corpus/matrix/" + name);
}

class PythonKernel : public FuzzAttention {
 protected:
  void SetUp() override {
    FuzzAttention::SetUp();
#ifndef ATTNFUZZ_HAVE_PYTHON_BRIDGE
    GTEST_SKIP() << "this build has no Python bridge (Python 3's development files not found)";
#endif
    if (!std::filesystem::exists(test_python())) {
      GTEST_SKIP() << "no Python environment with numpy at " << test_python()
                   << ": run scripts/python_env.sh (or set ATTNFUZZ_TEST_PYTHON)";
    }
  }
  // fuzz_attention with --kernel-py FILE:FUNCTION and the test environment's interpreter.
  RunResult run_python(const std::string& file, const std::string& function,
                       const std::string& arguments) const {
    return run("--kernel-py " + quoted(file + ":" + function) + " --python " +
               quoted(test_python()) + " " + arguments);
  }
};

TEST_F(PythonKernel, ACorrectReferencePassesEveryEdgeAndVariantCase) {
  for (const char* name : {"edges.json", "variants.json"}) {
    const RunResult result = run_python(kReference, "attention", "--configs " + matrix(name));
    EXPECT_EQ(result.exit_code, 0) << name << "\n" << result.out << result.err;
    EXPECT_THAT(result.last_line(), ::testing::MatchesRegex("[0-9]+ passed, 0 failed, 0 skipped"))
        << name;
  }
}

TEST_F(PythonKernel, Fp8InputsReachAFunctionAsMlDtypesArraysWithTheirDescaleFactors) {
  // The reference declares fp8_inputs: handed float8_e4m3fn / float8_e5m2 views of the harness's
  // bytes and FlashAttention 3's q_descale, k_descale, v_descale, it passes every case of fp8.json.
  const RunResult result = run_python(kReference, "attention", "--configs " + matrix("fp8.json"));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.last_line(), ::testing::MatchesRegex("[0-9]+ passed, 0 failed, 0 skipped"));
}

// Each plant of tests/python/reference_attention.py, and the matrix that shows it.
struct PythonPlant {
  const char* name;
  const char* matrix;
};

class PythonKernelPlant : public PythonKernel, public ::testing::WithParamInterface<PythonPlant> {};

TEST_P(PythonKernelPlant, FailsItsMatrixThroughTheBridge) {
  const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", GetParam().name);
  const RunResult result =
      run_python(kReference, "attention",
                 "--configs " + matrix(GetParam().matrix) + " --quiet --fail-fast");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  // The replay line names the function, not the bridge's plugin.
  EXPECT_THAT(result.out, HasSubstr("--kernel-py " + kReference + ":attention"));
}

INSTANTIATE_TEST_SUITE_P(EachPlant, PythonKernelPlant,
                         ::testing::Values(PythonPlant{"causal_off_by_one", "edges.json"},
                                           PythonPlant{"gqa_modulo", "edges.json"},
                                           PythonPlant{"scale_ignored", "edges.json"},
                                           PythonPlant{"masked_row_nan", "edges.json"},
                                           PythonPlant{"window_edge_off_by_one", "variants.json"},
                                           PythonPlant{"softcap_before_scale", "variants.json"},
                                           PythonPlant{"alibi_top_left", "variants.json"},
                                           PythonPlant{"lse_log2", "variants.json"},
                                           PythonPlant{"varlen_offset_wrong_end", "variants.json"},
                                           PythonPlant{"block_table_logical_page", "variants.json"},
                                           PythonPlant{"query_scaled_in_place", "edges.json"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(PythonKernel, APlantIsFoundByThePropertySearchAndTheSavedCaseReplaysThroughTheBridge) {
  const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", "causal_off_by_one");
  const RunResult result =
      run_python(kReference, "attention",
                 "--properties --budget 30 --property matches_oracle --regressions " +
                     quoted(path("regressions").string()));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("FAIL matches_oracle"));
  EXPECT_THAT(result.out, HasSubstr("replay: fuzz_attention --properties"));
  EXPECT_THAT(result.out, HasSubstr("--kernel-py " + kReference + ":attention"));
  // The saved case fails again when replayed through the bridge, and passes without the plant.
  const auto saved = std::filesystem::directory_iterator(path("regressions"))->path();
  const std::string replay =
      "--properties --property matches_oracle --replay " + quoted(saved.string());
  EXPECT_EQ(run_python(kReference, "attention", replay).exit_code, 1);
  const ScopedEnvironment no_plant("ATTNFUZZ_TEST_PLANT", "none");
  EXPECT_EQ(run_python(kReference, "attention", replay).exit_code, 0);
}

TEST_F(PythonKernel, GqaEqualsMhaHoldsForTheReferenceWithinTheBoundAndCatchesItsGqaPlant) {
  // The numpy reference declares no shape-independent arithmetic: its GQA and MHA runs are
  // compared within the bound, which still fails a wrong head mapping.
  const std::string search = "--properties --budget 8 --property gqa_equals_mha --regressions " +
                             quoted(path("regressions").string());
  const RunResult correct = run_python(kReference, "attention", search);
  EXPECT_EQ(correct.exit_code, 0) << correct.out << correct.err;
  EXPECT_THAT(correct.out, HasSubstr("PASS gqa_equals_mha"));
  const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", "gqa_modulo");
  const RunResult planted = run_python(kReference, "attention", search);
  EXPECT_EQ(planted.exit_code, 1) << planted.out << planted.err;
  EXPECT_THAT(planted.out, HasSubstr("FAIL gqa_equals_mha"));
}

TEST_F(PythonKernel, AnExceptionFailsTheCaseNamingItsTypeMessageAndLine) {
  const RunResult result = run_python(kMisbehaving, "raises", "--configs " + matrix("edges.json"));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.out, ::testing::ContainsRegex("ValueError \\(" + kMisbehaving +
                                                   ":[0-9]+ in raises\\): the kernel gave up"));
}

TEST_F(PythonKernel, AReturnedOutputIsCheckedThenCopied) {
  const RunResult right =
      run_python(kMisbehaving, "returns_the_output", "--configs " + matrix("variants.json"));
  EXPECT_EQ(right.exit_code, 0) << right.out << right.err;

  const RunResult shape =
      run_python(kMisbehaving, "returns_a_wrong_shape", "--configs " + matrix("edges.json"));
  EXPECT_EQ(shape.exit_code, 1) << shape.out << shape.err;
  EXPECT_THAT(shape.out, HasSubstr("the function returned an output of shape (1,); expected (1, "));

  const RunResult dtype =
      run_python(kMisbehaving, "returns_float32", "--configs " + matrix("edges.json"));
  EXPECT_EQ(dtype.exit_code, 1) << dtype.out << dtype.err;
  EXPECT_THAT(dtype.out, HasSubstr("returned an output of dtype float32; expected float16"));
}

TEST_F(PythonKernel, WhatTheFunctionDeclaresDecidesWhichCasesItGets) {
  // No attnfuzz_features: every case of the variants' matrix (each uses one) is skipped naming its
  // feature, and nothing ran (exit 2).
  const RunResult dense =
      run_python(kMisbehaving, "only_fp16", "--configs " + matrix("variants.json"));
  EXPECT_EQ(dense.exit_code, 2) << dense.out << dense.err;
  EXPECT_THAT(dense.out,
              HasSubstr("misbehaving_kernels-only_fp16 (plugin) does not support varlen"));
  EXPECT_THAT(dense.out, HasSubstr("(plugin) does not support paged K/V"));
  // attnfuzz_supports: bf16 cases skipped with its reason.
  const RunResult fp16 = run_python(kMisbehaving, "only_fp16", "--configs " + matrix("edges.json"));
  EXPECT_EQ(fp16.exit_code, 0) << fp16.out << fp16.err;
  EXPECT_THAT(fp16.out, HasSubstr("only fp16, not bfloat16"));
  // fp8 inputs only for a function that declares them.
  const RunResult fp8 = run_python(kMisbehaving, "only_fp16", "--configs " + matrix("fp8.json"));
  EXPECT_EQ(fp8.exit_code, 2) << fp8.out << fp8.err;
  EXPECT_THAT(fp8.out, HasSubstr("(plugin) does not support fp8 inputs"));
}

TEST_F(PythonKernel, AttnfuzzSupportsSeesEachTensorsStrides) {
  // edges/301: B=2 H=4 Sq=65 D=64 BSHD with rows padded by one element: Q's strides are
  // (65 x 4 x 65, 4 x 65, 65) elements. edges/146: rows padded by 8, aligned, so it runs.
  const RunResult run = run_python(kMisbehaving, "only_aligned_rows",
                                   "--configs " + matrix("edges.json") + " --case edges/301");
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("rows not 16-byte aligned: q_strides (16900, 260, 65)"));
  const RunResult aligned = run_python(kMisbehaving, "only_aligned_rows",
                                       "--configs " + matrix("edges.json") + " --case edges/146");
  EXPECT_EQ(aligned.exit_code, 0) << aligned.out << aligned.err;
}

TEST_F(PythonKernel, TheReferencesBackwardPassesTheBackwardMatrixThroughTheBridge) {
  const RunResult result =
      run_python(kReference, "attention", "--configs " + matrix("backward.json"));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.last_line(), HasSubstr("11 passed, 0 failed, 0 skipped"));
}

TEST_F(PythonKernel, APagedBackwardWritesTheUsedPagesAndRowsThatSeeNoKeyGetNone) {
  // Paged K/V, whose unused pages must stay untouched, and causal Sq > Sk: rows that see no key.
  const std::string paged = quoted(write("paged.json", R"({"name": "paged", "cases": [
      {"backward": true, "batch": 2, "heads": 4, "kv_heads": 2, "seq_len_q": 40, "seq_len_k": 20,
       "causal": true, "page_size": 16, "dtype": ["fp16", "bf16"]}]})")
                                       .string());
  const RunResult result = run_python(kReference, "attention", "--configs " + paged);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.last_line(), HasSubstr("2 passed, 0 failed, 0 skipped"));
}

class PythonBackwardPlant : public PythonKernel,
                            public ::testing::WithParamInterface<const char*> {};

TEST_P(PythonBackwardPlant, FailsTheBackwardMatrixInItsBackwardPass) {
  const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", GetParam());
  const RunResult result =
      run_python(kReference, "attention", "--configs " + matrix("backward.json") + " --quiet");
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  // Wrong gradients, judged against the oracle (not an exception of the backward).
  EXPECT_THAT(result.out, ::testing::ContainsRegex("backward pass: d[QKV]\\[.* beyond its bound"));
}

INSTANTIATE_TEST_SUITE_P(EachPlant, PythonBackwardPlant,
                         ::testing::Values("backward_rowsum_dropped", "backward_gqa_modulo",
                                           "backward_softcap_slope_forgotten",
                                           "backward_dk_unscaled"));

TEST_F(PythonKernel, ABackwardsFaultsAreNamedCaseByCaseAndItsDeclinesSkip) {
  const std::string one_case = "--configs " + matrix("backward.json") + " --case backward/1";
  const RunResult raised = run_python(kMisbehaving, "backward_that_raises", one_case);
  EXPECT_EQ(raised.exit_code, 1) << raised.out << raised.err;
  EXPECT_THAT(raised.out, ::testing::ContainsRegex("ArithmeticError \\(" + kMisbehaving +
                                                   ":[0-9]+ in _raise_in_backward\\): the "
                                                   "backward gave up"));
  const RunResult two = run_python(kMisbehaving, "backward_returning_two_gradients", one_case);
  EXPECT_EQ(two.exit_code, 1) << two.out << two.err;
  EXPECT_THAT(two.out, HasSubstr("a backward returns None (having written dq, dk and dv) or "
                                 "(dq, dk, dv); it returned tuple"));
  // backward/2 is the soft-capped case: skipped with the function's reason, the rest pass.
  const RunResult declined = run_python(kMisbehaving, "backward_only_without_softcap",
                                        "--configs " + matrix("backward.json"));
  EXPECT_EQ(declined.exit_code, 0) << declined.out << declined.err;
  EXPECT_THAT(declined.out, HasSubstr("no soft cap in this backward"));
  EXPECT_THAT(declined.last_line(), HasSubstr("10 passed, 0 failed, 1 skipped"));
}

TEST_F(PythonKernel, WhatCannotBeLoadedIsExitThreeNamingTheSpecAndThePythonError) {
  const struct {
    std::string spec;
    std::string message;
  } cases[] = {
      {kSourceDir + "/tests/python/no_such_file.py:attention", "no such file"},
      {kReference + ":no_such_function",
       "AttributeError: " + kReference + " has no function no_such_function"},
      {"no_such_module_anywhere:attention", "ModuleNotFoundError: No module named"},
      {kMisbehaving + ":declares_an_unknown_feature",
       "ValueError: attnfuzz_features: unknown rotary"},
      {kMisbehaving + ":declares_a_backward_numpy_cannot_take",
       "ValueError: attnfuzz_features declares 'backward' but the function has no "
       "attnfuzz_backward: numpy has no autograd"},
      {kMisbehaving + ":runs_on_the_gpu",
       "ValueError: attnfuzz_device 'cuda' needs --py-framework torch"},
      {kReference, "expected FILE.py:FUNCTION or MODULE:FUNCTION"},
      {kSourceDir + "/tests/python:attention", "a file must end in .py"},
  };
  for (const auto& each : cases) {
    const RunResult result = run("--kernel-py " + quoted(each.spec) + " --python " +
                                 quoted(test_python()) + " --configs " + matrix("edges.json"));
    EXPECT_EQ(result.exit_code, 3) << each.spec << "\n" << result.out << result.err;
    EXPECT_THAT(result.err, HasSubstr("--kernel-py")) << each.spec;
    EXPECT_THAT(result.err, HasSubstr(each.message)) << each.spec << "\n" << result.err;
  }
  const RunResult both = run("--kernel-py " + quoted(kReference + ":attention") +
                             " --kernel-lib x.so --configs " + matrix("edges.json"));
  EXPECT_EQ(both.exit_code, 3);
  EXPECT_THAT(both.err, HasSubstr("one kernel source at a time"));
  const RunResult framework = run("--kernel-py " + quoted(kReference + ":attention") +
                                  " --py-framework tensorflow --configs " + matrix("edges.json"));
  EXPECT_EQ(framework.exit_code, 3);
  EXPECT_THAT(framework.err, HasSubstr("--py-framework tensorflow: numpy, torch or jax"));
}

}  // namespace
}  // namespace attnfuzz
