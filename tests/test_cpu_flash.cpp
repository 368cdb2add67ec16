// cpu_flash against the oracle through the real case runner: the tolerance never flags the
// correct kernel on thousands of random cases, and always flags each planted bug on every case in
// which that bug changes the result by more than rounding can.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "fuzz/case_runner.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "support/case_generator.h"

namespace attnfuzz {
namespace {

using testing::CaseLimits;
using testing::small_case;

CaseResult run_case(const AttentionCase& attention_case, PlantedBug plant = PlantedBug::none) {
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = plant;
  return CaseRunner(settings).run(attention_case);
}

std::int64_t block_n_of(const AttentionCase& attention_case) {
  return find_tile_config(attention_case.head_dim)->block_n;
}

TEST(CpuFlash, IsNeverFlaggedOnThousandsOfRandomCasesOfEveryDistribution) {
  constexpr int kCases = 3000;
  const rc::Gen<AttentionCase> generator = small_case({.max_seq_len = 160, .distributions = {}});
  std::map<DataDistribution, int> passed_by_distribution;
  double worst_ratio = 0.0;
  for (int index = 0; index < kCases; ++index) {
    const AttentionCase attention_case = generator(rc::Random(index + 1), 50).value();
    const CaseResult result = run_case(attention_case);
    ASSERT_EQ(result.status, CaseStatus::pass)
        << describe_case(attention_case) << ": " << result.reason;
    ++passed_by_distribution[attention_case.data];
    worst_ratio = std::max(worst_ratio, result.comparison.error_ratio);
  }
  // Every distribution was exercised many times, not just a lucky few.
  EXPECT_EQ(passed_by_distribution.size(), std::size(kDataDistributions));
  for (const auto& [distribution, passed] : passed_by_distribution) {
    EXPECT_GT(passed, kCases / 20) << distribution_name(distribution);
  }
  std::printf("worst error_ratio of cpu_flash over %d random cases: %.3f\n", kCases, worst_ratio);
}

TEST(CpuFlash, PassesTheShippedEdgeShapesAtSeqLen1023And1025) {
  for (const std::int64_t seq_len_k : {1023, 1025}) {
    AttentionCase attention_case;
    attention_case.heads = attention_case.kv_heads = 2;
    attention_case.seq_len_q = 130;
    attention_case.seq_len_k = seq_len_k;
    attention_case.causal = true;
    const CaseResult result = run_case(attention_case);
    EXPECT_EQ(result.status, CaseStatus::pass) << result.reason;
  }
}

// ---- each plant is caught wherever it is observable ----

RC_GTEST_PROP(CpuFlashPlants, DroppingThePartialLastKeyTileIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal, DataDistribution::uniform}});
  // Observable: a partial last key tile exists, holds at least 1/16 of the keys (so the rows
  // that lose it lose real weight, beyond bf16's rounding), and some query row sees into it.
  const std::int64_t partial_keys = attention_case.seq_len_k % block_n_of(attention_case);
  RC_PRE(partial_keys != 0 && partial_keys * 16 >= attention_case.seq_len_k);
  attention_case.causal =
      attention_case.causal && attention_case.seq_len_q <= attention_case.seq_len_k;
  const CaseResult result = run_case(attention_case, PlantedBug::drop_last_key_tile);
  RC_ASSERT(result.status == CaseStatus::fail);
}

// Query rows that see at least one key.
std::int64_t visible_rows(const AttentionCase& attention_case) {
  const std::int64_t per_head = attention_case.causal
                                    ? std::min(attention_case.seq_len_q, attention_case.seq_len_k)
                                    : attention_case.seq_len_q;
  return attention_case.batch * attention_case.heads * per_head;
}

RC_GTEST_PROP(CpuFlashPlants, CausalOffByOneIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal, DataDistribution::uniform}});
  attention_case.causal = true;
  // Observable: the leaked key carries real weight in rows that see few keys. With 16+ query
  // rows per head and at most 16 more keys than queries, the first rows see fewer than 33 keys.
  RC_PRE(attention_case.seq_len_q >= 16);
  RC_PRE(attention_case.seq_len_k <= attention_case.seq_len_q + 16);
  const CaseResult result = run_case(attention_case, PlantedBug::causal_off_by_one);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, RunningMaxStartingAtZeroIsAlwaysCaughtOnLargeScores, ()) {
  const AttentionCase attention_case =
      *small_case({.max_seq_len = 200, .distributions = {DataDistribution::large_scores}});
  // Observable: some row's scores all lie far below 0. Each row's offset is N(0, 200^2), so with
  // 64+ rows that see keys the chance that none does is below 1e-10.
  RC_PRE(visible_rows(attention_case) >= 64);
  const CaseResult result = run_case(attention_case, PlantedBug::running_max_init_zero);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, SkippingTheOnlineRescaleIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal, DataDistribution::uniform}});
  // Observable: rows see two or more full key tiles, so the running max grows after the first
  // tile in about half the rows; with 64+ rows some grow by more than rounding hides.
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2 * block_n_of(attention_case));
  RC_PRE(visible_rows(attention_case) >= 64);
  const CaseResult result = run_case(attention_case, PlantedBug::skip_rescale);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, NanForFullyMaskedRowsIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case();
  attention_case.causal = true;
  RC_PRE(attention_case.seq_len_q > attention_case.seq_len_k);  // rows that see no key exist
  const CaseResult result = run_case(attention_case, PlantedBug::masked_row_nan);
  RC_ASSERT(result.status == CaseStatus::fail);
  RC_ASSERT(result.comparison.first_failure.has_value());
  RC_ASSERT(result.comparison.first_failure->fault == ElementFault::nonfinite);
}

TEST(CpuFlashPlants, EveryPlantOfTheKernelHasADetectionPropertyAbove) {
  // Adding a plant to cpu_flash without a property that proves it is caught fails here.
  const std::vector<PlantedBug> covered = {
      PlantedBug::drop_last_key_tile, PlantedBug::causal_off_by_one,
      PlantedBug::running_max_init_zero, PlantedBug::skip_rescale, PlantedBug::masked_row_nan};
  const std::span<const PlantedBug> carried = cpu_flash_kernel().plants();
  EXPECT_EQ(std::vector<PlantedBug>(carried.begin(), carried.end()), covered);
}

}  // namespace
}  // namespace attnfuzz
