// SPDX-License-Identifier: BSD-3-Clause
// Kernels from plugins (include/attnfuzz/attnfuzz_plugin.h): the example plugin passes every edge
// case, its copy with a planted causal off-by-one fails with the failing element named; a plugin
// of ABI version 1 runs the dense cases and skips the variants by name, the version 2 example
// passes every variant and its copy with a window edge off by one fails the windowed ones (on the
// host and, on a GPU, the CUDA twin of both); each malformed plugin is refused with a message that
// names its problem, through the loader and through the real binary (exit 3).
#include "kernels/plugin_kernel.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include "core/file_io.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "matrix/matrix_file.h"
#include "run/case_runner.h"
#include "support/loaded_plugin.h"
#include "support/scoped_environment.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;

CaseResult run_on(const AttentionKernel& kernel, const AttentionCase& attention_case) {
  RunSettings settings;
  settings.kernel = std::string(kernel.name());
  return CaseRunner(settings).run(attention_case);
}

TEST(PluginKernel, TheExamplePluginReportsItsNameAndSiteAndPassesEveryEdgeCase) {
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_PLUGIN, "example_cpu_attention");
  EXPECT_EQ(example.name(), "example_cpu_attention");
  EXPECT_EQ(example.site(), ExecutionSite::host);
  EXPECT_EQ(find_kernel("example_cpu_attention"), &example);
  int passed = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const CaseResult result = run_on(example, attention_case);
    ASSERT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
    ++passed;
  }
  EXPECT_GT(passed, 150);
}

TEST(PluginKernel, TheBuggyExampleFailsCausalCasesAndNamesTheFailingElement) {
  const AttentionKernel& buggy =
      plugin(ATTNFUZZ_EXAMPLE_BUGGY_PLUGIN, "example_cpu_attention_buggy");
  EXPECT_EQ(buggy.name(), "example_cpu_attention_buggy");
  int failed = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const CaseResult result = run_on(buggy, attention_case);
    if (!attention_case.causal) {
      EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
    } else if (result.status == CaseStatus::fail) {
      EXPECT_THAT(result.reason, ::testing::ContainsRegex("element \\(b=")) << attention_case.id;
      ++failed;
    }
  }
  EXPECT_GT(failed, 20) << "a causal off-by-one must fail most causal edge cases";
}

// cpu_flash behind version 1 of the ABI (tests/plugins/planted_flash_v1.cpp), whose plant the
// environment names: the kill-rate table's version 1 column measures the engines through it.
TEST(PluginKernel, ThePlantedFlashPluginIsCpuFlashAndCarriesThePlantItsEnvironmentNames) {
  const AttentionKernel& wrapped = plugin(ATTNFUZZ_PLANTED_FLASH_V1_PLUGIN, "planted_flash_v1");
  int passed = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const CaseResult result = run_on(wrapped, attention_case);
    EXPECT_NE(result.status, CaseStatus::fail) << attention_case.id << ": " << result.reason;
    passed += result.status == CaseStatus::pass;
  }
  EXPECT_GT(passed, 250);
  AttentionCase partial_key_tile;
  partial_key_tile.seq_len_q = partial_key_tile.seq_len_k = 113;
  {
    const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", "drop_last_key_tile");
    EXPECT_EQ(run_on(wrapped, partial_key_tile).status, CaseStatus::fail);
  }
  {
    const ScopedEnvironment plant("ATTNFUZZ_TEST_PLANT", "no_such_plant");
    const CaseResult result = run_on(wrapped, partial_key_tile);
    EXPECT_EQ(result.status, CaseStatus::fail);
    EXPECT_THAT(result.reason, HasSubstr("ATTNFUZZ_TEST_PLANT names no plant: no_such_plant"));
  }
  EXPECT_EQ(run_on(wrapped, partial_key_tile).status, CaseStatus::pass);
}

// ---- ABI version 2: the attention variants ----

// A plugin of version 1 (built before the variants existed) keeps working: it runs every dense case
// and skips each case with a variant, naming the feature it lacks.
TEST(PluginKernel, AVersion1PluginPassesTheDenseCasesAndSkipsEachVariantByName) {
  const AttentionKernel& old = plugin(ATTNFUZZ_ABI_VERSION_1_PLUGIN, "abi_version_1");
  int passed = 0, skipped = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("sanitize.json").cases) {
    const CaseResult result = run_on(old, attention_case);
    EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
    ++passed;
  }
  for (const AttentionCase& attention_case : load_built_in_matrix("variants.json").cases) {
    const CaseResult result = run_on(old, attention_case);
    ASSERT_EQ(result.status, CaseStatus::skip) << attention_case.id;
    EXPECT_EQ(result.skip_cause, SkipCause::unsupported);
    EXPECT_THAT(result.reason, ::testing::ContainsRegex("abi_version_1 \\(plugin\\) does not "
                                                        "support .*exports no "
                                                        "attnfuzz_plugin_features"))
        << attention_case.id;
    ++skipped;
  }
  EXPECT_GT(passed, 0);
  EXPECT_EQ(skipped, 78);
  // fp8 inputs need version 4's dtype codes and descale pointers.
  const CaseResult fp8 = run_on(old, load_built_in_matrix("fp8.json").cases.front());
  EXPECT_EQ(fp8.status, CaseStatus::skip);
  EXPECT_THAT(fp8.reason, ::testing::HasSubstr("does not support fp8 inputs")) << fp8.reason;
}

TEST(PluginKernel, TheVersion4ExampleReadsFp8BytesAndDescaleFactorsAndPassesEveryFp8Case) {
  // Handed byte-packed e4m3/e5m2 tensors with their [batch][kv_heads] factors: every form of
  // fp8.json (FA3 prefill, each format mix, paged KV-cache decode, the variants on top) passes.
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_V2_PLUGIN, "example_cpu_attention_v2");
  int passed = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("fp8.json").cases) {
    const CaseResult result = run_on(example, attention_case);
    ASSERT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
    ++passed;
  }
  EXPECT_GE(passed, 31);
  // No version hands a backward fp8 inputs: its support says so, whatever the plugin declares.
  const SupportVerdict backward =
      example.backward_support(problem_of(load_built_in_matrix("fp8.json").cases.front()));
  EXPECT_FALSE(backward.supported);
  EXPECT_THAT(backward.reason, ::testing::HasSubstr("hands a backward pass fp8 inputs"));
}

TEST(PluginKernel, TheVersion2ExamplePassesEveryVariantAndEveryEdgeCase) {
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_V2_PLUGIN, "example_cpu_attention_v2");
  int passed = 0;
  for (const char* matrix : {"variants.json", "edges.json"}) {
    for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
      const CaseResult result = run_on(example, attention_case);
      ASSERT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
      ++passed;
    }
  }
  EXPECT_GE(passed, 78 + 303);  // the two matrices' cases when this was written; they only grow
}

TEST(PluginKernel, AWindowWiderThanEverySequenceReachesAPluginClampedToTheSequences) {
  // The same mask: the plugin is not handed a width whose arithmetic overflows (the example
  // computes a diagonal minus window_left), and both it and cpu_flash pass.
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_V2_PLUGIN, "example_cpu_attention_v2");
  AttentionCase attention_case;
  attention_case.batch = 2;
  attention_case.heads = 2;
  attention_case.seq_len_q = 70;
  attention_case.seq_len_k = 90;
  attention_case.window_left = std::numeric_limits<std::int64_t>::max();
  attention_case.window_right = std::numeric_limits<std::int64_t>::max();
  const AttentionProblem problem = problem_of(attention_case);
  EXPECT_EQ(problem.window_left, 90);
  EXPECT_EQ(problem.window_right, 70);
  for (const bool causal : {false, true}) {
    attention_case.causal = causal;
    const CaseResult result = run_on(example, attention_case);
    EXPECT_EQ(result.status, CaseStatus::pass) << result.reason;
    RunSettings settings;
    settings.backend = Backend::cpu;
    EXPECT_EQ(CaseRunner(settings).run(attention_case).status, CaseStatus::pass);
  }
}

// A copy of a version 2 example with the window's left edge off by one: it fails nearly every
// windowed case of variants.json and passes the rest.
void expect_fails_the_windowed_cases_only(const AttentionKernel& buggy) {
  int failed = 0, windowed = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("variants.json").cases) {
    const CaseResult result = run_on(buggy, attention_case);
    if (attention_case.window_left < 0) {
      EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
      continue;
    }
    ++windowed;
    if (result.status == CaseStatus::fail) ++failed;
  }
  EXPECT_GE(failed, windowed - 2) << "a window edge off by one fails nearly every windowed case";
  EXPECT_GT(windowed, 15);
}

TEST(PluginKernel, TheBuggyVersion2ExampleFailsTheWindowedCasesAndPassesTheRest) {
  expect_fails_the_windowed_cases_only(
      plugin(ATTNFUZZ_EXAMPLE_V2_BUGGY_PLUGIN, "example_cpu_attention_v2_buggy"));
}

#ifdef ATTNFUZZ_EXAMPLE_CUDA_PLUGIN
// The CUDA examples launch a block per (row, head, batch) and refuse, naming the limit, a batch
// past grid z's 65535 (edges.json's 65,537 batches) rather than launch a grid that fails.
bool past_grid_limit_refused(const CaseResult& result) {
  return result.status == CaseStatus::skip && result.skip_cause == SkipCause::unsupported &&
         result.reason.find("grid dimensions") != std::string::npos;
}

TEST(PluginKernel, TheCudaExamplePluginRunsOnTheDeviceAndPassesEveryEdgeCase) {
  const AttentionKernel& example = plugin(ATTNFUZZ_EXAMPLE_CUDA_PLUGIN, "example_cuda_attention");
  EXPECT_EQ(example.site(), ExecutionSite::cuda_device);
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  int refused_past_grid_limit = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const CaseResult result = run_on(example, attention_case);
    if (past_grid_limit_refused(result)) {
      ++refused_past_grid_limit;
      continue;
    }
    EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
  }
  EXPECT_EQ(refused_past_grid_limit, 1);  // 65,537 batches; the pairs and rows cases fit its grid
}

TEST(PluginKernel, TheCudaVersion2ExamplePassesEveryVariantAndEveryEdgeCaseOnTheDevice) {
  const AttentionKernel& example =
      plugin(ATTNFUZZ_EXAMPLE_CUDA_V2_PLUGIN, "example_cuda_attention_v2");
  EXPECT_EQ(example.site(), ExecutionSite::cuda_device);
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  int cases = 0, passed = 0;
  int refused_past_grid_limit = 0;
  for (const char* matrix : {"variants.json", "edges.json"}) {
    for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
      ++cases;
      const CaseResult result = run_on(example, attention_case);
      if (past_grid_limit_refused(result)) {
        ++refused_past_grid_limit;
        continue;
      }
      EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
      passed += result.status == CaseStatus::pass;
    }
  }
  EXPECT_GE(cases, 78 + 303);  // the two matrices' cases when this was written; they only grow
  EXPECT_EQ(passed, cases - refused_past_grid_limit);
  EXPECT_EQ(refused_past_grid_limit, 1);
}

TEST(PluginKernel, TheBuggyCudaVersion2ExampleFailsTheWindowedCasesAndPassesTheRest) {
  const AttentionKernel& buggy =
      plugin(ATTNFUZZ_EXAMPLE_CUDA_V2_BUGGY_PLUGIN, "example_cuda_attention_v2_buggy");
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  expect_fails_the_windowed_cases_only(buggy);
}
#endif

TEST(PluginKernel, LoadingTheSamePluginTwiceIsRefusedByName) {
  plugin(ATTNFUZZ_EXAMPLE_PLUGIN, "example_cpu_attention");
  EXPECT_THAT(load_error(ATTNFUZZ_EXAMPLE_PLUGIN),
              HasSubstr("a kernel named 'example_cpu_attention' is already registered"));
}

TEST(PluginKernel, MalformedPluginsAreRefusedWithTheirProblemNamed) {
  EXPECT_THAT(load_error(ATTNFUZZ_MISSING_FORWARD_PLUGIN),
              HasSubstr("does not export attnfuzz_plugin_forward"));
  EXPECT_THAT(
      load_error(ATTNFUZZ_WRONG_ABI_PLUGIN),
      HasSubstr("built for plugin ABI version " + std::to_string(ATTNFUZZ_PLUGIN_ABI_VERSION + 41) +
                ", this harness speaks 1 to " + std::to_string(ATTNFUZZ_PLUGIN_ABI_VERSION)));
  EXPECT_THAT(load_error("/no/such/plugin.so"), HasSubstr("/no/such/plugin.so: no such file"));
  EXPECT_THAT(load_error(ATTNFUZZ_SOURCE_DIR "/README.md"), HasSubstr("cannot be loaded"));
}

TEST(PluginKernel, AnErrorStatusFailsTheCaseWithThePluginsMessageAndADeclineSkipsIt) {
  const AttentionKernel& failing = plugin(ATTNFUZZ_ERROR_STATUS_PLUGIN, "error_status");
  AttentionCase attention_case;
  attention_case.seq_len_k = 10;
  const CaseResult result = run_on(failing, attention_case);
  EXPECT_EQ(result.status, CaseStatus::fail);
  EXPECT_THAT(result.reason, HasSubstr("plugin returned status 1: workspace of 40960 bytes"));

  attention_case.head_dim = 96;
  const CaseResult declined = run_on(failing, attention_case);
  EXPECT_EQ(declined.status, CaseStatus::skip);
  EXPECT_THAT(declined.reason, HasSubstr("error_status (plugin): no head_dim 96 here"));
}

// ---- through the real binary ----

struct BinaryRun {
  int exit_code = -1;
  std::string out, err;
};

BinaryRun run_binary(const std::string& arguments) {
  // Files of this process alone: ctest runs the tests of this binary in parallel processes.
  const std::filesystem::path folder = std::filesystem::temp_directory_path();
  const std::string stem = "attnfuzz_plugin_test_" + std::to_string(getpid());
  const std::string out = (folder / (stem + ".out")).string();
  const std::string err = (folder / (stem + ".err")).string();
  const std::string command = std::string(ATTNFUZZ_FUZZ_ATTENTION) + " " + arguments + " >" + out +
                              " 2>" + err + " </dev/null";
  const int status = std::system(command.c_str());
  BinaryRun run;
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  run.out = read_file(out);
  run.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return run;
}

const std::string kSmallMatrix =
    std::string(" --configs ") + ATTNFUZZ_SOURCE_DIR + "/corpus/matrix/sanitize.json --quiet";

TEST(PluginKernelBinary, KernelLibRunsTheMatrixOnThePluginAndNamesItInReports) {
  const BinaryRun run =
      run_binary(std::string("--kernel-lib ") + ATTNFUZZ_EXAMPLE_PLUGIN + kSmallMatrix);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(" passed, 0 failed"));
}

TEST(PluginKernelBinary, TheBuggyPluginExitsOneWithAReplayCommandThatLoadsIt) {
  const BinaryRun run =
      run_binary(std::string("--kernel-lib ") + ATTNFUZZ_EXAMPLE_BUGGY_PLUGIN + kSmallMatrix);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("--kernel-lib " + std::string(ATTNFUZZ_EXAMPLE_BUGGY_PLUGIN)));
  EXPECT_THAT(run.out, HasSubstr("--kernel example_cpu_attention_buggy"));
}

TEST(PluginKernelBinary, PropertiesRunOnThePlugin) {
  const std::filesystem::path regressions =
      std::filesystem::temp_directory_path() /
      ("attnfuzz_plugin_regressions_" + std::to_string(getpid()));
  const BinaryRun run = run_binary(std::string("--kernel-lib ") + ATTNFUZZ_EXAMPLE_BUGGY_PLUGIN +
                                   " --properties --property causal_future_independence"
                                   " --budget 20 --fail-fast --regressions " +
                                   regressions.string());
  std::filesystem::remove_all(regressions);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("--kernel-lib"));
}

TEST(PluginKernelBinary, AMalformedPluginIsAHarnessErrorExitThree) {
  const BinaryRun run =
      run_binary(std::string("--kernel-lib ") + ATTNFUZZ_WRONG_ABI_PLUGIN + kSmallMatrix);
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("--kernel-lib: plugin "));
  EXPECT_THAT(run.err,
              HasSubstr("ABI version " + std::to_string(ATTNFUZZ_PLUGIN_ABI_VERSION + 41)));
}

}  // namespace
}  // namespace attnfuzz
