// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash's backward (kernels/cpu_flash_backward.cpp) against the float64 gradients under the
// derived bound (BackwardBound), on random cases of every variant but paged K/V, handed O and the
// log-sum-exp from the float64 forward as the harness hands them; and the bound is tight enough to
// see a backward that drops the rowsum(dO * O) term.
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "support/backward_fixture.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fuzz/case_generator.h"
#include "kernels/flash_tile_traits.h"

namespace attnfuzz {
namespace {

void run_backward(BackwardFixture& run) {
  cpu_flash_kernel().backward(run.problem, run.tensors(), run.backward_tensors(), PlantedBug::none);
}

RC_GTEST_PROP(CpuFlashBackward, EveryGradientElementIsWithinTheDerivedBound, ()) {
  AttentionCase c = *with_variants(small_case({.max_seq_len = 96, .distributions = {}}));
  c.page_size = 0;  // the backward has no paged K/V, and no fp8 inputs
  c.q_storage = c.k_storage = c.v_storage = InputStorage::same;
  c.descale = Descale::none;
  RC_PRE(find_tile_config(c.head_dim) != nullptr);
  BackwardFixture run(c);
  run_backward(run);
  // Failed nowhere (passed where the bound can judge, inconclusive elsewhere).
  const GradientComparison comparison = run.compare();
  RC_ASSERT_FALSE(comparison.failed);
  const double ratio = comparison.bound_ratio;
  RC_TAG(comparison.inconclusive ? "inconclusive"
         : ratio > 0.5           ? "worst ratio 1/2 to 1"
         : ratio > 0.25          ? "worst ratio 1/4 to 1/2"
                                 : "worst ratio at most 1/4");
}

// FlashAttention's order for a GQA group: K and V expanded to every query head, each head's dK and
// dV rounded to the dtype, then the group summed (in fp32, rounded once more). The bound allows
// for it (docs/tolerance.md, term 6).
RC_GTEST_PROP(CpuFlashBackward, AGroupSummedFromHeadsRoundedToTheDtypeIsWithinTheBound, ()) {
  AttentionCase c = *small_case({.max_seq_len = 64, .distributions = {}});
  c.heads = c.kv_heads * *rc::gen::element<std::int64_t>(2, 4);
  c.layout = Layout::bshd;
  c.row_padding = 0;
  c.placement = Placement::shared;  // Q and O keep their strides when K and V gain heads
  c.causal = *rc::gen::arbitrary<bool>();
  RC_PRE(find_tile_config(c.head_dim) != nullptr);
  BackwardFixture run(c);
  run_backward(run);  // the grouped run, for its dQ

  // The expanded problem: every query head its own copy of its kv head's K and V.
  AttentionCase expanded_case = c;
  expanded_case.kv_heads = c.heads;
  const AttentionProblem expanded = problem_of(expanded_case);
  const AttentionProblem& problem = run.problem;
  const std::int64_t group = problem.group_size(), dim = problem.head_dim;
  std::vector<std::uint16_t> k(static_cast<std::size_t>(k_span(expanded))),
      v(static_cast<std::size_t>(v_span(expanded))), dk(k.size()), dv(v.size()), dq(run.dq.size());
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        std::copy_n(
            run.inputs.k.data() + problem.k_row_offset(b, j) + h / group * problem.k_strides.head,
            dim, k.data() + expanded.k_row_offset(b, j) + h * expanded.k_strides.head);
        std::copy_n(
            run.inputs.v.data() + problem.v_row_offset(b, j) + h / group * problem.v_strides.head,
            dim, v.data() + expanded.v_row_offset(b, j) + h * expanded.v_strides.head);
      }
    }
  }
  AttentionTensors tensors =
      with_index_arrays({run.inputs.q.data(), k.data(), v.data(), run.output.data()}, expanded);
  tensors.lse = run.lse.data();
  cpu_flash_kernel().backward(expanded, tensors,
                              {run.grad_output.data(), dq.data(), dk.data(), dv.data()},
                              PlantedBug::none);
  // Each head's dK and dV, already rounded to the dtype, summed over the group and rounded again.
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
      for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
        for (std::int64_t d = 0; d < dim; ++d) {
          float dk_sum = 0.0f, dv_sum = 0.0f;
          for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
            dk_sum += dtype_to_float(
                dk[expanded.k_row_offset(b, j) + h * expanded.k_strides.head + d], problem.dtype);
            dv_sum += dtype_to_float(
                dv[expanded.v_row_offset(b, j) + h * expanded.v_strides.head + d], problem.dtype);
          }
          run.dk[problem.k_row_offset(b, j) + g * problem.k_strides.head + d] =
              float_to_dtype(dk_sum, problem.dtype);
          run.dv[problem.v_row_offset(b, j) + g * problem.v_strides.head + d] =
              float_to_dtype(dv_sum, problem.dtype);
        }
      }
    }
  }
  const GradientComparison comparison = run.compare();
  RC_LOG() << comparison.reason;
  RC_ASSERT_FALSE(comparison.failed);
}

TEST(CpuFlashBackward, ABackwardWithoutTheRowsumTermIsFarOutsideTheBound) {
  // D_i = rowsum(dO * O) dropped is dS = P dP: handing the kernel O = 0 makes it so.
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 70;
  c.seq_len_k = 90;
  c.head_dim = 64;
  c.causal = true;
  BackwardFixture run(c);
  run_backward(run);
  EXPECT_TRUE(run.compare().passed) << run.compare().reason;
  std::fill(run.output.begin(), run.output.end(), std::uint16_t{0});
  run_backward(run);
  const GradientComparison dropped = run.compare();
  EXPECT_TRUE(dropped.failed);
  EXPECT_GT(dropped.bound_ratio, 10.0);
}

// A small backward matrix: GQA with causal Sq != Sk over several key tiles, soft-capping with
// ALiBi and a window, packed sequences, and a plain dense case.
std::vector<AttentionCase> backward_cases() {
  std::vector<AttentionCase> cases;
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 70;
  c.seq_len_k = 150;
  c.head_dim = 64;
  c.causal = true;
  cases.push_back(c);
  c.causal = false;
  c.softcap = 5.0;
  c.alibi = true;
  c.window_left = 40;
  c.window_right = 10;
  c.data = DataDistribution::large_scores;
  cases.push_back(c);
  c = cases.front();
  c.batch = 3;
  c.seq_lens_q = {70, 9, 33};
  c.seq_lens_k = {150, 40, 77};
  cases.push_back(c);
  c = cases.front();
  c.causal = false;
  c.heads = c.kv_heads = 3;
  c.layout = Layout::bhsd;
  cases.push_back(c);
  return cases;
}

TEST(CpuFlashBackward, PassesWhereHugeValuesMeetProbabilitiesBelowFloatsNormalRange) {
  // Found by bench_false_alarms --backward: bf16 V near 1e38 under a soft cap, whose exact dK of
  // 1e-26 a correct kernel computes as 0 once P = exp(s - L) underflows fp32 (the bound's term 7).
  AttentionCase c;
  c.batch = 2;
  c.heads = c.kv_heads = 2;
  c.seq_len_q = 1;
  c.seq_len_k = 2177;
  c.head_dim = 64;
  c.dtype = Dtype::bf16;
  c.data = DataDistribution::value_outliers;
  c.alibi = true;
  c.softcap = 2.5;
  c.window_right = 1;
  c.placement = Placement::kv_cache;
  c.seed = 1567032312;
  BackwardFixture run(c);
  run_backward(run);
  const GradientComparison comparison = run.compare();
  EXPECT_FALSE(comparison.failed) << comparison.reason;
}

TEST(CpuFlashBackward, PassesEveryCaseOfTheBackwardMatrix) {
  for (const AttentionCase& c : backward_cases()) {
    BackwardFixture run(c);
    run_backward(run);
    const GradientComparison comparison = run.compare();
    EXPECT_TRUE(comparison.passed) << describe_case(c) << ": " << comparison.reason;
  }
}

// Which cases of backward_cases() (by index) each plant fails: none beyond those where its bug
// acts (the GQA cases for a GQA bug, the soft-capped one for the cap's slope, the masked ones for
// the mask, the packed one for its offsets), and every one of those.
struct BackwardPlantKills {
  PlantedBug plant;
  std::vector<int> failed_cases;
};
const BackwardPlantKills kBackwardPlantKills[] = {
    {PlantedBug::backward_gqa_modulo, {0, 1, 2}},
    {PlantedBug::backward_rowsum_dropped, {0, 1, 2, 3}},
    {PlantedBug::backward_rowsum_from_next_row, {0, 1, 2, 3}},
    {PlantedBug::backward_softcap_slope_forgotten, {1}},
    {PlantedBug::backward_mask_not_applied, {0, 1, 2}},
    {PlantedBug::backward_lse_log2, {0, 1, 2, 3}},
    {PlantedBug::backward_dk_unscaled, {0, 1, 2, 3}},
    {PlantedBug::backward_varlen_key_offset, {2}},
    {PlantedBug::backward_dq_last_key_tile_only, {0, 1, 2, 3}},
};

class CpuFlashBackwardPlant : public ::testing::TestWithParam<BackwardPlantKills> {};

TEST_P(CpuFlashBackwardPlant, FailsExactlyTheCasesOfTheBackwardMatrixWhereItsBugActs) {
  ASSERT_TRUE(cpu_flash_kernel().carries(GetParam().plant));
  const std::vector<AttentionCase> cases = backward_cases();
  std::vector<int> failed;
  for (int index = 0; index < static_cast<int>(cases.size()); ++index) {
    BackwardFixture run(cases[index]);
    cpu_flash_kernel().backward(run.problem, run.tensors(), run.backward_tensors(),
                                GetParam().plant);
    const GradientComparison comparison = run.compare();
    if (comparison.failed) failed.push_back(index);
    EXPECT_TRUE(comparison.failed || comparison.passed) << comparison.reason;
  }
  EXPECT_EQ(failed, GetParam().failed_cases);
}

TEST(CpuFlashBackwardPlant, EveryBackwardPlantOfTheCatalogueIsInTheKillTable) {
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (info.detector != PlantDetector::backward) continue;
    EXPECT_TRUE(std::any_of(std::begin(kBackwardPlantKills), std::end(kBackwardPlantKills),
                            [&](const BackwardPlantKills& row) { return row.plant == info.bug; }))
        << info.name;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, CpuFlashBackwardPlant,
                         ::testing::ValuesIn(kBackwardPlantKills), [](const auto& info) {
                           return std::string(planted_bug_name(info.param.plant));
                         });

}  // namespace
}  // namespace attnfuzz
