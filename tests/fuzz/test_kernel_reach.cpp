// SPDX-License-Identifier: BSD-3-Clause
// What the kernel under test can run (fuzz/kernel_reach.h), and the search drawing only that: a
// version 1 plugin is offered no variant, cpu_flash every variant of its head dims, and a kernel
// that runs nothing here everything (each case then skipped with its reason).
#include "fuzz/kernel_reach.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include "fuzz/properties.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "kernels/plugin_kernel.h"

namespace attnfuzz {
namespace {

constexpr int kDraws = 2000;

AttentionCase drawn(const rc::Gen<AttentionCase>& generator, int index) {
  return generator(rc::Random(20261127u + static_cast<std::uint64_t>(index)), 100).value();
}

RunSettings settings_for(std::string kernel, Backend backend = Backend::cpu) {
  RunSettings settings;
  settings.backend = backend;
  settings.kernel = std::move(kernel);
  return settings;
}

TEST(KernelReach, CpuFlashRunsEveryVariantBothDtypesAndItsOwnHeadDims) {
  const KernelReach reach = probe_kernel_reach(CaseRunner(settings_for("cpu_flash")));
  EXPECT_EQ(reach.features, kAllProblemFeatures);
  EXPECT_EQ(reach.dtypes.size(), kOutputDtypeCount);
  std::vector<std::int64_t> dims = reach.head_dims;
  std::sort(dims.begin(), dims.end());
  EXPECT_EQ(dims, (std::vector<std::int64_t>{32, 64, 96, 128, 256}));
  EXPECT_TRUE(reach.backward);
  EXPECT_EQ(describe_unreached(reach), "head dims 80 160 192 16");
}

TEST(KernelReach, AVersion1PluginIsOfferedNoVariantAndEveryHeadDimItRuns) {
  if (find_kernel("abi_version_1") == nullptr) load_plugin_kernel(ATTNFUZZ_ABI_VERSION_1_PLUGIN);
  const KernelReach reach = probe_kernel_reach(CaseRunner(settings_for("abi_version_1")));
  EXPECT_EQ(reach.features, 0u);
  EXPECT_EQ(reach.head_dims.size(), std::size(kBuiltInHeadDims) + std::size(kOtherHeadDims));
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    EXPECT_NE(describe_unreached(reach).find(info.name), std::string::npos) << info.name;
  }
  EXPECT_FALSE(reach.backward);
  EXPECT_NE(describe_unreached(reach).find("the backward pass"), std::string::npos);
  const rc::Gen<AttentionCase> generator = search_cases(reach);
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(generator, index);
    ASSERT_EQ(features_of(problem_of(attention_case)), 0u) << describe_case(attention_case);
    ASSERT_FALSE(attention_case.backward) << describe_case(attention_case);
  }
}

TEST(KernelReach, AVersion1PluginsSearchNamesWhatItLeavesOutAndJudgesEveryCaseItDraws) {
  if (find_kernel("abi_version_1") == nullptr) load_plugin_kernel(ATTNFUZZ_ABI_VERSION_1_PLUGIN);
  PropertySettings settings;
  settings.run = settings_for("abi_version_1");
  settings.properties = {Property::matches_oracle};
  settings.budget_seconds = 2.0;
  settings.regressions_dir = std::filesystem::temp_directory_path() / "attnfuzz_reach_unused";
  std::ostringstream log;
  const std::vector<PropertyOutcome> outcomes = run_properties(settings, log);
  EXPECT_NE(log.str().find("not drawn (abi_version_1 does not run them): "), std::string::npos)
      << log.str();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_GT(outcomes[0].tests, 10);
  // Drawn for what it runs: only the cases the comparison leaves inconclusive (a bf16 value too
  // large to judge, docs/tolerance.md) are not judged; unreached, half of them had a variant.
  EXPECT_GE(outcomes[0].judged, outcomes[0].tests * 9 / 10);
  EXPECT_FALSE(outcomes[0].minimal_case.has_value()) << outcomes[0].message;
}

// cpu_flash, but for paged K/V only in pages of 256 rows (as FlashAttention 2's kernels take), and
// MHA only (as some fused kernels): a kernel that runs a feature in one of its forms.
class PickyFlash final : public AttentionKernel {
 public:
  std::string_view name() const override { return "test_picky_flash"; }
  std::string_view summary() const override { return "cpu_flash, pages of 256 only, MHA only"; }
  std::string capabilities() const override { return "pages of 256"; }
  ExecutionSite site() const override { return ExecutionSite::host; }
  std::span<const PlantedBug> plants() const override { return {}; }
  SupportVerdict supports(const AttentionProblem& problem) const override {
    if (problem.paged() && problem.page_size % 256 != 0) return SupportVerdict::no("page size");
    if (problem.heads != problem.kv_heads) return SupportVerdict::no("grouped heads");
    return cpu_flash_kernel().supports(problem);
  }
  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug plant) const override {
    cpu_flash_kernel().forward(problem, tensors, plant);
  }
};

TEST(KernelReach, AFeatureTheKernelRunsInOneFormOnlyIsStillOffered) {
  if (find_kernel("test_picky_flash") == nullptr) add_kernel(std::make_unique<PickyFlash>());
  const KernelReach reach = probe_kernel_reach(CaseRunner(settings_for("test_picky_flash")));
  EXPECT_EQ(reach.features, kAllProblemFeatures);
  EXPECT_FALSE(reach.grouped_heads);
  EXPECT_EQ(describe_unreached(reach),
            "head dims 80 160 192 16, grouped heads (GQA, MQA), the backward pass");
}

TEST(KernelReach, AKernelThatRunsNothingHereIsOfferedEverything) {
  if (cuda_device_status().usable) GTEST_SKIP() << "a CUDA device is usable here";
  const KernelReach reach =
      probe_kernel_reach(CaseRunner(settings_for("cuda_flash", Backend::cuda)));
  EXPECT_EQ(reach.features, kAllProblemFeatures);
  EXPECT_TRUE(reach.head_dims.empty());
  EXPECT_TRUE(reach.dtypes.empty());
  EXPECT_EQ(describe_unreached(reach), "");
}

TEST(KernelReach, TheSearchDrawsNoVariantTheKernelLacksAndEveryOneItHas) {
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    const std::uint32_t bit = static_cast<std::uint32_t>(info.feature);
    KernelReach without;
    without.features = kAllProblemFeatures & ~bit;
    KernelReach only;
    only.features = bit;
    const rc::Gen<AttentionCase> lacking = search_cases(without);
    const rc::Gen<AttentionCase> having = search_cases(only);
    int used = 0;
    for (int index = 0; index < kDraws; ++index) {
      const AttentionCase lacking_case = drawn(lacking, index);
      ASSERT_EQ(features_of(problem_of(lacking_case)) & bit, 0u)
          << info.name << " drawn for a kernel without it: " << describe_case(lacking_case);
      const std::uint32_t features = features_of(problem_of(drawn(having, index)));
      ASSERT_EQ(features & ~bit, 0u) << "a variant drawn for a kernel with only " << info.name;
      used += features != 0 ? 1 : 0;
    }
    EXPECT_GT(used, kDraws / 10) << info.name << " is drawn too rarely for a kernel that has it";
  }
}

TEST(KernelReach, TheSearchDrawsTheBackwardPassOnlyForAKernelThatHasOne) {
  KernelReach with_backward;
  KernelReach without_backward;
  without_backward.backward = false;
  const rc::Gen<AttentionCase> having = search_cases(with_backward);
  const rc::Gen<AttentionCase> lacking = search_cases(without_backward);
  int backward_cases = 0;
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(having, index);
    if (attention_case.backward) {
      ++backward_cases;
      ASSERT_EQ(attention_case.page_size, 0) << "no built-in backward takes paged K/V";
    }
    ASSERT_FALSE(drawn(lacking, index).backward);
  }
  EXPECT_GT(backward_cases, kDraws / 10);
  EXPECT_LT(backward_cases, kDraws / 2);
}

TEST(KernelReach, AKernelWithoutGroupedHeadsIsOfferedOnlyMha) {
  KernelReach reach;
  reach.grouped_heads = false;
  const rc::Gen<AttentionCase> generator = search_cases(reach);
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(generator, index);
    ASSERT_EQ(attention_case.heads, attention_case.kv_heads) << describe_case(attention_case);
  }
  EXPECT_EQ(describe_unreached(reach), "grouped heads (GQA, MQA)");
}

TEST(KernelReach, TheSearchDrawsOnlyTheHeadDimsAndDtypesTheKernelRuns) {
  KernelReach reach;
  reach.head_dims = {80, 128};
  reach.dtypes = {Dtype::bf16};
  const rc::Gen<AttentionCase> generator = search_cases(reach);
  int other = 0;
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(generator, index);
    ASSERT_TRUE(attention_case.head_dim == 80 || attention_case.head_dim == 128)
        << describe_case(attention_case);
    ASSERT_EQ(attention_case.dtype, Dtype::bf16);
    other += attention_case.head_dim == 80 ? 1 : 0;
  }
  EXPECT_GT(other, 0);
}

}  // namespace
}  // namespace attnfuzz
