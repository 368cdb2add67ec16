// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash against the oracle through the real case runner: the tolerance never flags the
// correct kernel on thousands of random cases, and always flags each planted bug on every case in
// which that bug changes the result by more than rounding can.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <map>
#include <random>

#include "case/case_codec.h"
#include "core/problem_features.h"
#include "fuzz/case_generator.h"
#include "kernels/flash_plant_rules.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "matrix/matrix_file.h"
#include "run/case_runner.h"
#include "run/guarded_output.h"
#include "support/bit_hash.h"

namespace attnfuzz {
namespace {

CaseResult run_case(const AttentionCase& attention_case, PlantedBug plant = PlantedBug::none) {
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = plant;
  return CaseRunner(settings).run(attention_case);
}

// A large Q or K value injected into a bf16 case (about 1e38) takes its rows' scores past what fp32
// rounding leaves a verdict for: those rows are inconclusive by design (docs/tolerance.md), and so
// is a packed batch of empty sequences, which has no output to judge. Every other case must be
// judged nearly always.
bool inconclusive_by_design(const AttentionCase& attention_case) {
  const bool huge_scores = attention_case.dtype == Dtype::bf16 &&
                           attention_case.injection.value == SpecialValue::large &&
                           attention_case.injection.tensor != TensorRole::value;
  return huge_scores || problem_of(attention_case).query_rows() == 0;
}

std::int64_t block_n_of(const AttentionCase& attention_case) {
  return find_tile_config(attention_case.head_dim)->block_n;
}

TEST(CpuFlash, IsNeverFlaggedOnThousandsOfRandomCasesOfEveryDistribution) {
  constexpr int kCases = 3000;
  const rc::Gen<AttentionCase> generator = small_case({.max_seq_len = 160,
                                                       .distributions = {},
                                                       .injections = true,
                                                       .other_scales = true,
                                                       .long_rows = false,
                                                       .other_head_dims = false});
  std::map<DataDistribution, int> passed_by_distribution;
  int inconclusive = 0, inconclusive_by_design_count = 0;
  double worst_ratio = 0.0;
  for (int index = 0; index < kCases; ++index) {
    const AttentionCase attention_case = generator(rc::Random(index + 1), 50).value();
    const CaseResult result = run_case(attention_case);
    ASSERT_NE(result.status, CaseStatus::fail)
        << describe_case(attention_case) << ": " << result.reason;
    if (result.status == CaseStatus::skip) {
      // Only cases the tolerance cannot judge (docs/tolerance.md): huge injected scores in bf16.
      ASSERT_EQ(result.skip_cause, SkipCause::inconclusive) << result.reason;
      if (inconclusive_by_design(attention_case)) {
        ++inconclusive_by_design_count;
      } else {
        ++inconclusive;
      }
      continue;
    }
    ++passed_by_distribution[attention_case.data];
    worst_ratio = std::max(worst_ratio, result.comparison.error_ratio);
  }
  // Every distribution was exercised many times, not just a lucky few.
  EXPECT_EQ(passed_by_distribution.size(), std::size(kDataDistributions));
  for (const auto& [distribution, passed] : passed_by_distribution) {
    EXPECT_GT(passed, kCases / 20) << distribution_name(distribution);
  }
  EXPECT_LT(inconclusive, kCases / 50);
  std::printf(
      "worst error_ratio of cpu_flash over %d random cases: %.3f (%d inconclusive, and %d by "
      "design: a large Q or K value in bf16, or no query row)\n",
      kCases, worst_ratio, inconclusive, inconclusive_by_design_count);
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
//
// Properties whose observability rests on the data's statistics use ordinary distributions
// without special values: an injected large Q or V widens the bound of its row or column (the
// tolerance scales with scale |Q_i| |K_j| and with A) far enough to hide a plant there.

RC_GTEST_PROP(CpuFlashPlants, DroppingThePartialLastKeyTileIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
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
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  attention_case.causal = true;
  // Observable: the leaked key carries real weight in rows that see few keys. With 16+ query
  // rows per head and at most 16 more keys than queries, the first rows see fewer than 33 keys.
  RC_PRE(attention_case.seq_len_q >= 16);
  RC_PRE(attention_case.seq_len_k <= attention_case.seq_len_q + 16);
  const CaseResult result = run_case(attention_case, PlantedBug::causal_off_by_one);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, RunningMaxStartingAtZeroIsAlwaysCaughtOnLargeScores, ()) {
  const AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::large_scores}, .injections = false});
  // Observable: some row's scores all lie far below 0. Each row's offset is N(0, 200^2), so with
  // 64+ rows that see keys the chance that none does is below 1e-10.
  RC_PRE(visible_rows(attention_case) >= 64);
  const CaseResult result = run_case(attention_case, PlantedBug::running_max_init_zero);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, SkippingTheOnlineRescaleIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
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

RC_GTEST_PROP(CpuFlashPlants, LeavingThePartialLastQueryTileUnwrittenIsAlwaysCaught, ()) {
  const AttentionCase attention_case = *small_case();
  // Observable: a partial last query tile exists. Its rows keep the output's poison pattern,
  // whatever the data.
  RC_PRE(attention_case.seq_len_q % find_tile_config(attention_case.head_dim)->block_m != 0);
  const CaseResult result = run_case(attention_case, PlantedBug::partial_last_query_tile_unwritten);
  RC_ASSERT(result.status == CaseStatus::fail);
  RC_ASSERT(result.comparison.first_failure.has_value());
  RC_ASSERT(result.comparison.first_failure->fault == ElementFault::unwritten);
}

RC_GTEST_PROP(CpuFlashPlants, TopLeftCausalMaskIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  attention_case.causal = true;
  // Observable: seq_len_q != seq_len_k, where the two alignments differ by the shift
  // |seq_len_k - seq_len_q|. With more keys, query 0 sees 1 key instead of 1 + shift; with more
  // queries, the first rows see keys where they should see none (and write 0).
  RC_PRE(attention_case.seq_len_q != attention_case.seq_len_k);
  const CaseResult result = run_case(attention_case, PlantedBug::causal_top_left);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, SoftmaxScaleHardcodedForHeadDim64IsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal}, .injections = false});
  attention_case.softmax_scale = *rc::gen::element(0.0, 0.0, 0.09, 0.2);  // 0: 1/sqrt(head_dim)
  // Observable: the scale the case asks for is not 1/8 (head_dim 64's), so the softmax runs at a
  // temperature 1.2x to 2x off; N(0, 1) scores (std ~1) over 2+ visible keys per row make the
  // probabilities, and so the output, move by far more than rounding.
  RC_PRE(effective_softmax_scale(attention_case) != 0.125);
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2);
  const CaseResult result = run_case(attention_case, PlantedBug::scale_hardcoded_64);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, GqaHeadMappingByModuloIsAlwaysCaught, ()) {
  const AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  // Observable: 1 < kv_heads < heads. Then head 1 reads kv head 1 % kv_heads = 1 instead of
  // 1 / group = 0: independent keys and values, a different output. (MQA maps every head to 0,
  // MHA every head to itself, both ways.)
  RC_PRE(attention_case.kv_heads > 1 && attention_case.heads > attention_case.kv_heads);
  const CaseResult result = run_case(attention_case, PlantedBug::gqa_modulo);
  RC_ASSERT(result.status == CaseStatus::fail);
}

// Long, nearly flat rows: one head of one batch, 16 to 200 query rows over 6000 to 8192 keys of
// uniform data, not causal. On these an accumulator rounded to the input dtype again and again
// shows, through the FlashAttention rule: each rounding is an error of up to u relative to the
// partial sum, the size the tolerance already grants P's rounding, so a few stay within the
// bound; but uniform data give rows whose scores lie within about +-1 and whose outputs, means of
// many V, are small. The plain same-precision reference is accurate to about u |O| there, while
// the kernel's T roundings of partial sums of sqrt(keys) size add up, relative to |O|, like
// sqrt(T). One head keeps a case of 8192 keys fast; no injection (a large V would make the
// rule's atol, u max |O|, as large as the error). Call only inside a property.
AttentionCase long_flat_rows() {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::uniform}, .injections = false});
  attention_case.batch = attention_case.heads = attention_case.kv_heads = 1;
  attention_case.seq_len_k = *rc::gen::inRange<std::int64_t>(6000, 8193);
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_q >= 16);
  return attention_case;
}

RC_GTEST_PROP(CpuFlashPlants, PvAccumulatorInTheInputDtypeIsAlwaysCaughtOnLongRows, ()) {
  // Rounded after every key tile: T = seq_len_k / 64 >= 94. Measured over 384 such cases: the
  // FlashAttention ratio is >= 1.4 from 6000 keys with 16+ query rows (a single row can pass,
  // 0.89; 1.04 at 3000 keys); the correct kernel's stays <= 0.5 there.
  const CaseResult result = run_case(long_flat_rows(), PlantedBug::pv_fp16_accumulation);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, UnpaddedBatchStrideIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case();
  // Observable: row padding and a second batch. Batch 1 then reads and writes at the compact
  // offset, inside batch 0's padded rows: it writes into the output's row padding and leaves its
  // own outputs unwritten, whatever the data.
  attention_case.batch = *rc::gen::inRange<std::int64_t>(2, 4);
  attention_case.row_padding = *rc::gen::element<std::int64_t>(1, 8);
  const CaseResult result = run_case(attention_case, PlantedBug::batch_stride_unpadded);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, OAddressedWithQsStridesIsAlwaysCaughtWhereTheirRowsLieApart, ()) {
  // Observable: O's rows lie elsewhere than Q's, which needs a second query row (bshd: their
  // sequence strides differ): a fresh O beside a padded Q, O a slice of a wider buffer, or Q a
  // view into a packed QKV buffer. The kernel's writes land between O's rows or past its end,
  // within the checked trailing guard (GuardedOutput::trailing_guard_elements), and leave rows of
  // its own poison, whatever the data.
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal}, .injections = false});
  attention_case.layout = Layout::bshd;
  attention_case.placement =
      *rc::gen::element(Placement::o_contiguous, Placement::o_slice, Placement::qkv_packed);
  if (attention_case.placement == Placement::o_contiguous) {
    attention_case.row_padding = *rc::gen::element<std::int64_t>(1, 8);
  }
  attention_case.seq_len_q = std::max<std::int64_t>(attention_case.seq_len_q, 2);
  const CaseResult result = run_case(attention_case, PlantedBug::o_with_q_strides);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, VAddressedWithKsStridesIsAlwaysCaughtWhenVIsTransposed, ()) {
  // Observable: V in the other layout than K with two kv heads or more (one kv head in either
  // layout has the same row stride) and a second key. Each V row read is another head's row or
  // poison: with normal data, never the right values.
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal}, .injections = false});
  attention_case.placement = Placement::v_other_layout;
  attention_case.kv_heads = *rc::gen::inRange<std::int64_t>(2, 4);
  attention_case.heads = attention_case.kv_heads * *rc::gen::inRange<std::int64_t>(1, 3);
  attention_case.seq_len_k = std::max<std::int64_t>(attention_case.seq_len_k, 2);
  attention_case.causal = false;
  const CaseResult result = run_case(attention_case, PlantedBug::v_with_k_strides);
  RC_ASSERT(result.status == CaseStatus::fail);
}

TEST(CpuFlashPlants, WorkDroppedPastTheGridLimitIsCaughtOneBlockPastItAndNotAtIt) {
  // Cheap shapes at CUDA's limit of 65535 blocks in grid y or z (one query row or one head, a few
  // keys): one block past it, the dropped pair or row is left poison; at it, nothing is dropped.
  AttentionCase base;
  base.heads = 4;
  base.kv_heads = 2;
  base.seq_len_k = 3;
  base.head_dim = 32;
  base.seed = 5;
  const struct {
    LaunchLimit limit;
    PlantedBug plant;
  } kinds[] = {{LaunchLimit::pairs, PlantedBug::pairs_past_grid_limit_dropped},
               {LaunchLimit::batches, PlantedBug::pairs_past_grid_limit_dropped},
               {LaunchLimit::query_rows, PlantedBug::query_rows_past_grid_limit_dropped}};
  for (const auto& kind : kinds) {
    const AttentionCase past = past_launch_limit(base, {kind.limit, 1, 32});
    EXPECT_EQ(run_case(past, kind.plant).status, CaseStatus::fail) << case_keys_to_json(past);
    EXPECT_EQ(run_case(past, PlantedBug::none).status, CaseStatus::pass) << case_keys_to_json(past);
  }
  AttentionCase at_limit = past_launch_limit(base, {LaunchLimit::batches, 1, 32});
  at_limit.batch = kMaxGridYZ;
  EXPECT_EQ(run_case(at_limit, PlantedBug::pairs_past_grid_limit_dropped).status, CaseStatus::pass);
  at_limit = past_launch_limit(base, {LaunchLimit::query_rows, 1, 32});
  at_limit.seq_len_q = kMaxGridYZ;
  EXPECT_EQ(run_case(at_limit, PlantedBug::query_rows_past_grid_limit_dropped).status,
            CaseStatus::pass);
}

RC_GTEST_PROP(CpuFlashPlants, NoMaxSubtractionIsAlwaysCaughtOnLargeScores, ()) {
  const AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::large_scores}, .injections = false});
  // Observable: some row's scores lie beyond exp's fp32 range: above +88.7 (exp overflows to
  // inf, the row turns NaN) or all below -103 (every exp underflows, the row writes 0). Row
  // offsets are N(0, 200^2): with 64+ rows that see keys, the chance that none does is < 1e-20.
  RC_PRE(visible_rows(attention_case) >= 64);
  const CaseResult result = run_case(attention_case, PlantedBug::no_max_subtraction);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ReadingPastSeqLenKIsAlwaysCaught, ()) {
  const AttentionCase attention_case = *small_case();
  // Observable: a partial last key tile exists. Its rows past seq_len_k of the last batch's last
  // kv head lie in the inputs' NaN guard tail: without the causal mask they enter the softmax (a
  // NaN row sum, the row written as 0 or NaN); under it their probability is 0, but 0 x NaN in
  // P V is NaN, as on tensor cores. Other heads read a neighbour's rows, wrong but finite.
  RC_PRE(attention_case.seq_len_k % block_n_of(attention_case) != 0);
  const CaseResult result = run_case(attention_case, PlantedBug::read_past_seq_len_k);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, StaleRowSumIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  // Observable: the last key tile holds at least 1/16 of the keys, so the row sum the output is
  // divided by misses real weight (with one tile it is 0, and rows write 0). Not causal, so that
  // every row sees all of the last tile.
  attention_case.causal = false;
  const std::int64_t block_n = block_n_of(attention_case);
  const std::int64_t last_tile_keys = (attention_case.seq_len_k - 1) % block_n + 1;
  RC_PRE(last_tile_keys * 16 >= attention_case.seq_len_k);
  const CaseResult result = run_case(attention_case, PlantedBug::stale_row_sum);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, IgnoringTheRequestedSoftmaxScaleIsAlwaysCaught, ()) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal}, .injections = false});
  // Observable: the requested scale is at least 4x from the default 1/sqrt(head_dim) either way,
  // so the softmax runs at a temperature 4x to 16x off; N(0, 1) scores over 2+ visible keys per
  // row move the probabilities, and so the output, by far more than rounding.
  const double factor = *rc::gen::element(1.0 / 16, 1.0 / 4, 4.0, 8.0);
  attention_case.softmax_scale = factor / std::sqrt(static_cast<double>(attention_case.head_dim));
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2);
  const CaseResult result = run_case(attention_case, PlantedBug::scale_ignored);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ASingleKeyShortcutWithTheWrongKvHeadIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  // Observable: one key, and 1 < kv_heads < heads. Head 1 then reads kv head 1 % kv_heads = 1
  // instead of 1 / group = 0: the single visible V row of another head (the last query row sees
  // it even under the causal mask).
  attention_case.seq_len_k = 1;
  RC_PRE(attention_case.kv_heads > 1 && attention_case.heads > attention_case.kv_heads);
  const CaseResult result = run_case(attention_case, PlantedBug::single_key_wrong_kv_head);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ASplitKvCombineInTheInputDtypeIsAlwaysCaughtOnLongRows, ()) {
  // Past kSplitKvMinKeys keys, rounded after every split of kSplitKvKeys: T = seq_len_k / 128
  // >= 46, half pv_fp16_accumulation's. Measured over 120 such cases (16, 17, 64 and 200 query
  // rows over 6000, 7001 and 8192 keys, both dtypes, five seeds): the FlashAttention ratio is
  // 1.13 to 3.0, against at most 0.45 for the correct kernel on the same cases. At head_dim 32 it
  // sits near the limit (20 query rows, uniform data: 1.05 to 1.84 over 6000 to 8192 keys), and a
  // rerun found one below it: head dims from 64 on.
  AttentionCase attention_case = long_flat_rows();
  RC_PRE(attention_case.head_dim >= 64);
  const CaseResult result = run_case(attention_case, PlantedBug::split_kv_input_dtype_combine);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, TruncatingTheOutputIsAlwaysCaughtByTheBiasTest, ()) {
  AttentionCase attention_case =
      *small_case({.max_seq_len = 200,
                   .distributions = {DataDistribution::normal, DataDistribution::uniform},
                   .injections = false});
  // Observable: enough distinct, inexact rows for the bias test to reach its limit. Truncation
  // moves every element half a rounding step toward zero on average, so each row's sample is
  // about -1/2 and |Z| grows like sqrt(rows) / 2 (docs/tolerance.md): 200 rows give ~7 at the
  // least, the noise of the computation's own errors included. Two keys or more, every row
  // seeing all of them: one key makes the output a V row, exact in any rounding.
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2);
  RC_PRE(visible_rows(attention_case) >= 200);
  const CaseResult result = run_case(attention_case, PlantedBug::output_truncation);
  RC_ASSERT(result.status == CaseStatus::fail);
  RC_ASSERT(result.comparison.bias.leans);
}

TEST(CpuFlashPlants, AFlakyLastUlpIsAlwaysCaughtByTheDeterminismCheck) {
  // The plant flips the last element on every second kernel call; each case runs the kernel twice
  // and compares the bits, so every case sees one flipped and one clean output.
  AttentionCase attention_case;
  attention_case.heads = 2;
  attention_case.seq_len_q = attention_case.seq_len_k = 70;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const CaseResult result = run_case(attention_case, PlantedBug::flaky_last_ulp);
    ASSERT_EQ(result.status, CaseStatus::fail);
    EXPECT_NE(result.reason.find("nondeterministic: element (b=0, h=1, i=69, d=63)"),
              std::string::npos)
        << result.reason;
  }
}

TEST(CpuFlashPlants, AFlakyLastUlpPassesWithOneRunPerCase) {
  // What --repeats 1 gives up: the one-ulp change is inside every bound.
  AttentionCase attention_case;
  attention_case.heads = 2;
  attention_case.seq_len_q = attention_case.seq_len_k = 70;
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = PlantedBug::flaky_last_ulp;
  settings.repeats = 1;
  for (int run = 0; run < 4; ++run) {
    EXPECT_EQ(CaseRunner(settings).run(attention_case).status, CaseStatus::pass);
  }
}

TEST(CpuFlashPlants, AllowingNondeterminismJudgesEveryRunAgainstTheOracle) {
  AttentionCase attention_case;
  attention_case.heads = 2;
  attention_case.seq_len_q = attention_case.seq_len_k = 70;
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = PlantedBug::flaky_last_ulp;
  settings.repeats = 4;
  settings.allow_nondeterminism = true;
  EXPECT_EQ(CaseRunner(settings).run(attention_case).status, CaseStatus::pass);
  settings.plant = PlantedBug::output_truncation;  // wrong in every run: still fails
  attention_case.seq_len_q = 200;
  EXPECT_EQ(CaseRunner(settings).run(attention_case).status, CaseStatus::fail);
}

// cpu_flash's output is part of what the harness's own tests and benchmarks rest on: a rewrite
// of its loops for speed must leave every bit as it was. O and the log-sum-exp of every case of
// the edge, variant and fp8 matrices that it runs, hashed, as they were before its mask and
// staging loops were rewritten. The bits also rest on the C library's expf, tanhf and logf, which
// need not round alike in another libm, and on the three matrices' cases: a new libm or a new case
// there changes the hash without any fault in the kernel (compute it again with the kernel as it
// was, then pin it).
TEST(CpuFlash, KeepsItsOutputBitsOnTheShippedMatrices) {
  BitHash hash;
  int ran = 0;
  for (const char* matrix : {"edges.json", "variants.json", "fp8.json"}) {
    for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
      const AttentionProblem problem = problem_of(attention_case);
      if (!cpu_flash_kernel().supports(problem).supported) continue;
      if (problem.batch * problem.heads * problem.seq_len_q * problem.seq_len_k * problem.head_dim >
          (std::int64_t{1} << 26)) {
        continue;  // the launch-limit shapes: their few keys are covered by smaller cases
      }
      const AttentionInputs inputs = generate_inputs(problem, attention_case.data,
                                                     attention_case.seed, attention_case.injection);
      GuardedOutput output(problem);
      ASSERT_EQ(run_kernel(cpu_flash_kernel(), problem, inputs, PlantedBug::none, output).error,
                "");
      for (std::int64_t index = 0; index < output.span(); ++index) hash.add(output.data()[index]);
      if (output.lse() != nullptr) {
        for (std::int64_t index = 0; index < lse_span(problem); ++index) {
          hash.add(std::bit_cast<std::uint32_t>(output.lse()[index]));
        }
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 200);
  EXPECT_EQ(hash.value(), 0x392b49a4b35d9014ull)
      << std::hex << hash.value() << " over " << std::dec << ran << " cases";
}

TEST(CpuFlashPlants, TheSlowdownsLeaveEveryOutputBitAsItWas) {
  // A plant of speed, not of values: the outputs are the same bits, so only the performance gate
  // (fuzz_attention --bench --baseline) can see it. Every third case of the edge matrix.
  const std::vector<AttentionCase> cases = load_built_in_matrix("edges.json").cases;
  int compared = 0;
  for (std::size_t index = 0; index < cases.size(); index += 3) {
    const AttentionProblem problem = problem_of(cases[index]);
    if (!cpu_flash_kernel().supports(problem).supported) continue;
    const AttentionInputs inputs =
        generate_inputs(problem, cases[index].data, cases[index].seed, cases[index].injection);
    GuardedOutput plain(problem);
    ASSERT_EQ(run_kernel(cpu_flash_kernel(), problem, inputs, PlantedBug::none, plain).error, "");
    // Each slowdown in turn, by the case: slow_extra_pass and its lighter kin.
    const PlantedBug slowdowns[] = {PlantedBug::slow_extra_pass, PlantedBug::slow_extra_pass_1_in_2,
                                    PlantedBug::slow_extra_pass_1_in_4,
                                    PlantedBug::slow_extra_pass_1_in_8,
                                    PlantedBug::slow_extra_pass_1_in_12};
    const PlantedBug slowdown = slowdowns[(index / 3) % std::size(slowdowns)];
    GuardedOutput slow(problem);
    ASSERT_EQ(run_kernel(cpu_flash_kernel(), problem, inputs, slowdown, slow).error, "");
    EXPECT_TRUE(std::equal(plain.data(), plain.data() + plain.span(), slow.data()))
        << cases[index].id << " " << planted_bug_name(slowdown);
    ++compared;
  }
  EXPECT_GT(compared, 60);
}

// ---- the attention variants ----

// Runs `cases` cases of `generator` (RapidCheck seeds from `first_seed` on) on cpu_flash: none may
// fail and a skip must be inconclusive. Calls on_passed(case) for each that passed; returns how
// many were inconclusive other than by design (inconclusive_by_design).
template <typename OnPassed>
int run_without_false_alarms(const rc::Gen<AttentionCase>& generator, int cases, int first_seed,
                             OnPassed on_passed) {
  int inconclusive = 0;
  for (int index = 0; index < cases; ++index) {
    const AttentionCase attention_case = generator(rc::Random(index + first_seed), 50).value();
    const CaseResult result = run_case(attention_case);
    if (result.status == CaseStatus::fail) {
      ADD_FAILURE() << case_keys_to_json(attention_case).dump() << ": " << result.reason;
      break;
    }
    if (result.status == CaseStatus::skip) {
      EXPECT_EQ(result.skip_cause, SkipCause::inconclusive) << result.reason;
      inconclusive += inconclusive_by_design(attention_case) ? 0 : 1;
      continue;
    }
    on_passed(attention_case);
  }
  return inconclusive;
}

TEST(CpuFlash, IsNeverFlaggedOnRandomCasesWithTheVariants) {
  constexpr int kCases = 1500;
  std::map<std::string, int> passed_with;
  const int inconclusive = run_without_false_alarms(
      with_variants(small_case({.max_seq_len = 160, .distributions = {}, .injections = true})),
      kCases, 7, [&](const AttentionCase& attention_case) {
        const AttentionProblem problem = problem_of(attention_case);
        for (const ProblemFeatureInfo& info : kProblemFeatures) {
          if (info.used_by(problem)) ++passed_with[std::string(info.name)];
        }
      });
  // Every feature passed many times, not just a lucky few.
  EXPECT_EQ(passed_with.size(), std::size(kProblemFeatures));
  for (const auto& [feature, passed] : passed_with) EXPECT_GT(passed, kCases / 10) << feature;
  EXPECT_LT(inconclusive, kCases / 50);
}

// Cases with the variants, ordinary data, no special values.
AttentionCase variant_case() {
  return *with_variants(
      small_case({.max_seq_len = 200,
                  .distributions = {DataDistribution::normal, DataDistribution::uniform},
                  .injections = false}));
}

RC_GTEST_PROP(CpuFlashPlants, AVarlenOffsetFromTheWrongEndIsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  // Observable: some sequence has a row, which the plant then never writes.
  attention_case.seq_lens_q =
      drawn_sequence_lengths(attention_case.batch, attention_case.seq_len_q, attention_case.seed);
  RC_PRE(std::any_of(attention_case.seq_lens_q.begin(), attention_case.seq_lens_q.end(),
                     [](std::int64_t length) { return length > 0; }));
  const CaseResult result = run_case(attention_case, PlantedBug::varlen_offset_wrong_end);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ABlockTableIndexedByTheLogicalPageIsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  attention_case.page_size = *rc::gen::element<std::int64_t>(8, 16, 64);
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  attention_case.causal = false;
  attention_case.window_left = attention_case.window_right = -1;
  attention_case.softcap = 0.0;
  attention_case.alibi = false;
  // Observable: the plant reads the pool's spare page (poison), which the block table never
  // names. Otherwise it may read exactly the rows the table names in another order, and a
  // permutation of whole pages of keys (each with its values) leaves attention unchanged.
  const AttentionProblem problem = problem_of(attention_case);
  std::vector<bool> named(static_cast<std::size_t>(problem.pages), false);
  const std::int64_t table_entries = problem.batch * problem.pages_per_sequence;
  for (std::int64_t entry = 0; entry < table_entries; ++entry) {
    named[static_cast<std::size_t>(problem.block_table[static_cast<std::size_t>(entry)])] = true;
  }
  const auto spare = std::find(named.begin(), named.end(), false) - named.begin();
  RC_PRE(spare < table_entries);
  const CaseResult result = run_case(attention_case, PlantedBug::block_table_logical_page);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, AWindowEdgeOffByOneIsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  attention_case.causal = true;
  attention_case.window_left = *rc::gen::inRange<std::int64_t>(0, 8);
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  attention_case.alibi = false;
  // Observable: 16+ rows see at most 9 keys each and the key left of their window exists.
  RC_PRE(attention_case.seq_len_q >= 16);
  RC_PRE(attention_case.seq_len_k >= attention_case.window_left + 16);
  const CaseResult result = run_case(attention_case, PlantedBug::window_edge_off_by_one);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, SoftCappingBeforeTheScaleIsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  attention_case.softcap = 2.5;  // below the raw scores' spread (sqrt(head_dim) >= 5.6)
  attention_case.data = DataDistribution::normal;
  attention_case.softmax_scale = 0.0;
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  attention_case.window_left = attention_case.window_right = -1;
  RC_PRE(visible_rows(attention_case) >= 16 && attention_case.seq_len_k >= 2);
  const CaseResult result = run_case(attention_case, PlantedBug::softcap_before_scale);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, AlibiMeasuredFromTheTopLeftIsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  attention_case.alibi = true;
  attention_case.causal = false;
  attention_case.window_left = attention_case.window_right = -1;
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  // Observable: head 0's slope is at least 1/4, the diagonals lie 8+ keys apart, and rows see 8+
  // keys.
  RC_PRE(attention_case.heads >= 4 && attention_case.seq_len_k >= 8);
  RC_PRE(std::abs(attention_case.seq_len_k - attention_case.seq_len_q) >= 8);
  const CaseResult result = run_case(attention_case, PlantedBug::alibi_top_left);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ALogSumExpInBase2IsAlwaysCaught, ()) {
  AttentionCase attention_case = variant_case();
  attention_case.return_lse = true;
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  attention_case.window_left = attention_case.window_right = -1;
  // Observable: 16+ rows see 2+ keys; their log-sum-exps cannot all lie within 1e-3 of 0.
  RC_PRE(visible_rows(attention_case) >= 16 && attention_case.seq_len_k >= 2);
  const CaseResult result = run_case(attention_case, PlantedBug::lse_log2);
  RC_ASSERT(result.status == CaseStatus::fail);
}

// ---- split-KV: decode steps ----

// Decode steps (a few query rows, 257+ keys: the split-KV path) with or without the variants.
rc::Gen<AttentionCase> decode_steps(CaseLimits limits) {
  return rc::gen::map(rc::gen::pair(with_variants(small_case(std::move(limits))), decode_step()),
                      [](const auto& drawn) {
                        AttentionCase c = drawn.first;
                        c.seq_len_q = drawn.second.first;
                        c.seq_len_k = drawn.second.second;
                        // Lengths drawn for the first shape, drawn again for this one.
                        if (!c.seq_lens_q.empty()) {
                          c.seq_lens_q = drawn_sequence_lengths(c.batch, c.seq_len_q, c.seed);
                        }
                        if (!c.seq_lens_k.empty()) {
                          c.seq_lens_k = drawn_sequence_lengths(c.batch, c.seq_len_k, ~c.seed);
                        }
                        return fit_to_work_cap(c);
                      });
}

int kv_splits_of(const AttentionCase& attention_case) {
  return kv_split_plan(attention_case.seq_len_q, attention_case.seq_len_k,
                       *find_tile_config(attention_case.head_dim))
      .splits;
}

TEST(CpuFlash, IsNeverFlaggedOnDecodeStepsThroughTheSplitKvPath) {
  constexpr int kCases = 600;
  int split = 0;
  const int inconclusive = run_without_false_alarms(
      decode_steps({.max_seq_len = 8, .distributions = {}, .injections = true}), kCases, 11,
      [&](const AttentionCase& attention_case) { split += kv_splits_of(attention_case) > 1; });
  EXPECT_GT(split, kCases * 3 / 4);  // the work cap shortens only a few rows below the split
  EXPECT_LT(inconclusive, kCases / 50);
}

RC_GTEST_PROP(CpuFlashPlants, ASplitKvMergeThatIgnoresTheSplitsLogSumExpIsAlwaysCaught, ()) {
  AttentionCase attention_case =
      *decode_steps({.max_seq_len = 8,
                     .distributions = {DataDistribution::normal, DataDistribution::uniform},
                     .injections = false});
  attention_case.seq_lens_q.clear();
  attention_case.seq_lens_k.clear();
  attention_case.window_left = attention_case.window_right = -1;
  // Observable: rows see keys in two or more splits whose masses differ, which equal weights then
  // misjudge; splits of equal length carry nearly equal masses of random data, so the last one is
  // at most half as long as the others (at most 7 keys of it hidden by the causal diagonal).
  const KvSplitPlan plan = kv_split_plan(attention_case.seq_len_q, attention_case.seq_len_k,
                                         *find_tile_config(attention_case.head_dim));
  const std::int64_t split_keys = plan.key_tiles_per_split * block_n_of(attention_case);
  RC_PRE(plan.splits > 1);
  RC_PRE(2 * (attention_case.seq_len_k - (plan.splits - 1) * split_keys) <= split_keys);
  const CaseResult result = run_case(attention_case, PlantedBug::split_kv_merge_ignores_lse);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ScalingQueryInPlaceIsAlwaysCaughtWithTheOutputJudgedAsWritten, ()) {
  // Any case with a query row: its Q changes. The output itself is right, and is judged against
  // the inputs as they were, not as the kernel left them.
  const AttentionCase attention_case = *with_variants(
      small_case({.max_seq_len = 200,
                  .distributions = {DataDistribution::normal, DataDistribution::uniform},
                  .injections = false}));
  RC_PRE(problem_of(attention_case).query_rows() > 0);
  const CaseResult result = run_case(attention_case, PlantedBug::query_scaled_in_place);
  RC_ASSERT(result.status == CaseStatus::fail);
  RC_ASSERT(result.reason.find("the kernel changed its input Q") != std::string::npos);
  RC_ASSERT(!result.comparison.failed);
}

// ---- fp8 inputs ----

// A small case of ordinary data with fp8 inputs: `k` and `v` stored as given (Q too when
// `fp8_query`), descaled as drawn. Call only inside a property.
AttentionCase fp8_inputs_case(InputStorage k, InputStorage v, bool fp8_query,
                              std::vector<Descale> descales) {
  AttentionCase attention_case = *small_case(
      {.max_seq_len = 200, .distributions = {DataDistribution::normal}, .injections = false});
  attention_case.q_storage =
      fp8_query ? *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2) : InputStorage::same;
  attention_case.k_storage = k;
  attention_case.v_storage = v;
  attention_case.descale = *rc::gen::elementOf(descales);
  return attention_case;
}

RC_GTEST_PROP(CpuFlashPlants, E5m2DecodedAsE4m3IsAlwaysCaughtWhereVIsE5m2, ()) {
  // Observable: V's patterns read in the other format are other values (only zero reads alike).
  const AttentionCase attention_case = fp8_inputs_case(
      *rc::gen::element(InputStorage::same, InputStorage::e5m2), InputStorage::e5m2,
      *rc::gen::arbitrary<bool>(), {Descale::none, Descale::per_tensor, Descale::per_kv_head});
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_e5m2_read_as_e4m3);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, KsDescaleFactorForVsIsAlwaysCaughtWhereTheyDiffer, ()) {
  // large_scores keys (50 + 2.5 N) and normal values: K's factor is about 16 times V's, so the
  // output is off by that factor.
  AttentionCase attention_case =
      fp8_inputs_case(InputStorage::e4m3, *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2),
                      false, {Descale::per_tensor, Descale::per_kv_head});
  attention_case.data = DataDistribution::large_scores;
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_k_descale_for_v);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, DescaleFactorsAppliedTwiceAreAlwaysCaughtWhereScoresMatter, ()) {
  // Q's and K's factors (about 4 / 448 each for normal data) applied twice flatten the softmax:
  // observable wherever a row sees two keys or more.
  AttentionCase attention_case = fp8_inputs_case(InputStorage::e4m3, InputStorage::same, true,
                                                 {Descale::per_tensor, Descale::per_kv_head});
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2);
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_descale_twice);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, DescaleFactorsByQueryHeadAreCaughtWhereTheyReadOtherFactors, ()) {
  // Observable where a query head reads a factor of V (which scales its output) more than 5% from
  // its own group's: grouped heads, factors per KV head.
  AttentionCase attention_case =
      fp8_inputs_case(InputStorage::e4m3, InputStorage::e4m3, false, {Descale::per_kv_head});
  RC_PRE(attention_case.heads > attention_case.kv_heads && attention_case.kv_heads > 1);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, attention_case.data, attention_case.seed);
  bool differs = false;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv = h / problem.group_size();
      const float right = inputs.v_descale[static_cast<std::size_t>(b * problem.kv_heads + kv)];
      const float read = inputs.v_descale[static_cast<std::size_t>(
          descale_entry(problem, b, h, kv, PlantedBug::fp8_descale_by_query_head))];
      differs = differs || std::fabs(read / right - 1.0f) > 0.05f;
    }
  }
  RC_PRE(differs);
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_descale_by_query_head);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, ProbabilitiesRoundedToE4m3AreAlwaysCaughtWhereTheyOutgrowTheBound,
              ()) {
  // e4m3's 2^-4 on each probability against the output dtype's u: 128 times fp16's, which no row
  // of up to 200 keys averages away; 16 times bf16's, which a lone row of many keys can (one query
  // over 190 keys passed): bf16 rows of up to 32 keys.
  AttentionCase attention_case =
      fp8_inputs_case(InputStorage::e4m3, *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2),
                      *rc::gen::arbitrary<bool>(), {Descale::none, Descale::per_kv_head});
  attention_case.causal = false;
  RC_PRE(attention_case.seq_len_k >= 2);
  RC_PRE(attention_case.dtype == Dtype::fp16 || attention_case.seq_len_k <= 32);
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_p_rounded_to_e4m3);
  RC_ASSERT(result.status == CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashPlants, Fp8SubnormalsReadAsNormalsAreAlwaysCaughtWhereVIsAllSubnormal, ()) {
  // Every element of V its format's smallest subnormal, either sign: read with the leading one, 9
  // (e4m3) or 5 (e5m2) times its value, which moves every output that does not cancel to zero and
  // fails FlashAttention's rule wherever one does not.
  AttentionCase attention_case =
      fp8_inputs_case(InputStorage::same, *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2),
                      false, {Descale::none, Descale::per_tensor, Descale::per_kv_head});
  attention_case.injection = {SpecialValue::subnormal, TensorRole::value, 1 << 30};
  const AttentionProblem problem = problem_of(attention_case);
  RC_PRE(problem.query_rows() > 0);
  // Observable where the subnormal times its factor is many of the output dtype's subnormal steps
  // (e5m2's 2^-16 times a small factor is below fp16's).
  const AttentionInputs inputs =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  const double factor = inputs.v_descale.empty()
                            ? 1.0
                            : *std::min_element(inputs.v_descale.begin(), inputs.v_descale.end());
  RC_PRE(traits_of(problem.v_dtype()).min_subnormal * factor >=
         64 * traits_of(problem.dtype).min_subnormal);
  const CaseResult result = run_case(attention_case, PlantedBug::fp8_subnormals_as_normals);
  RC_ASSERT(result.status == CaseStatus::fail);
}

TEST(CpuFlashPlants, Fp8DequantizedIntoBf16IsCaughtOnNearlyEveryPrefillOfLargeScores) {
  // Each Q and K element times its factor rounded to bf16 (8 bits) moves a large_scores score by
  // about 2^-9 of its terms, some 200: far past the bound of an fp32 score, where the rounding
  // errors differ from key to key. They often do not: the keys' elements, 50 + 2.5 N quantized to
  // e4m3, take a few patterns that round alike in every key, and what they share cancels in the
  // softmax. So not every case shows it (2 of 100 such cases at D = 64 passed, 1 of 40 at D = 64
  // and 128); prefill shapes of many rows show it nearly always, as fp8.json's FlashAttention 3
  // case does (EveryPlant/FuzzAttentionPlant).
  std::mt19937 draw(29);
  const auto between = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(draw);
  };
  int caught = 0;
  constexpr int kCases = 40;
  for (int index = 0; index < kCases; ++index) {
    AttentionCase attention_case;
    attention_case.batch = between(1, 2);
    attention_case.kv_heads = between(1, 2);
    attention_case.heads = attention_case.kv_heads * between(1, 4);
    attention_case.seq_len_q = between(16, 100);
    attention_case.seq_len_k = between(32, 100);
    attention_case.head_dim = between(0, 1) == 0 ? 64 : 128;
    attention_case.dtype = Dtype::bf16;
    attention_case.data = DataDistribution::large_scores;
    attention_case.q_storage = attention_case.k_storage = InputStorage::e4m3;
    attention_case.descale = between(0, 1) == 0 ? Descale::per_tensor : Descale::per_kv_head;
    attention_case.seed = static_cast<std::uint64_t>(between(0, 1 << 30));
    caught +=
        run_case(attention_case, PlantedBug::fp8_dequantized_to_output).status == CaseStatus::fail;
  }
  EXPECT_GE(caught, kCases * 9 / 10);
}

RC_GTEST_PROP(CpuFlashDeclared, Fp8DequantizedIntoTheOutputDtypePassesWhereTheKernelDeclaresIt,
              ()) {
  // The plant above is vLLM's fp8 KV cache numerics: declared (--dequantize-to output), every case
  // with fp8 inputs passes or is inconclusive, with every distribution and special value.
  AttentionCase attention_case =
      *small_case({.max_seq_len = 300, .distributions = {}, .injections = true});
  attention_case.q_storage = *rc::gen::element(InputStorage::same, InputStorage::e4m3);
  attention_case.k_storage = *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2);
  attention_case.v_storage =
      *rc::gen::element(InputStorage::same, InputStorage::e4m3, InputStorage::e5m2);
  attention_case.descale =
      *rc::gen::element(Descale::none, Descale::per_tensor, Descale::per_kv_head);
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = PlantedBug::fp8_dequantized_to_output;
  settings.numerics = *parse_dequantization("output", DeclaredNumerics{});
  const CaseResult result = CaseRunner(settings).run(attention_case);
  RC_ASSERT(result.status != CaseStatus::fail);
}

RC_GTEST_PROP(CpuFlashDeclared, ProbabilitiesRoundedToE4m3PassWhereTheKernelDeclaresThem, ()) {
  // The plant above is FlashAttention 3's fp8 numerics: declared (--probabilities e4m3), every
  // case with an fp8 V passes or is inconclusive, with every distribution and special value.
  AttentionCase attention_case =
      *small_case({.max_seq_len = 300, .distributions = {}, .injections = true});
  attention_case.q_storage = *rc::gen::element(InputStorage::same, InputStorage::e4m3);
  attention_case.k_storage = *rc::gen::element(InputStorage::same, InputStorage::e4m3);
  attention_case.v_storage = *rc::gen::element(InputStorage::e4m3, InputStorage::e5m2);
  attention_case.descale =
      *rc::gen::element(Descale::none, Descale::per_tensor, Descale::per_kv_head);
  RunSettings settings;
  settings.backend = Backend::cpu;
  settings.plant = PlantedBug::fp8_p_rounded_to_e4m3;
  settings.numerics = *parse_probabilities("e4m3", DeclaredNumerics{});
  const CaseResult result = CaseRunner(settings).run(attention_case);
  RC_ASSERT(result.status != CaseStatus::fail);
}

TEST(CpuFlashPlants, EveryPlantOfTheKernelHasADetectionPropertyAbove) {
  // Adding a plant to cpu_flash without a property that proves it is caught fails here. The
  // host kernel's contract plants are proven caught end to end, through the matrix, the property
  // search and libFuzzer (EveryPlant/FuzzAttentionPlant, SearchFindsPlant, LibFuzzerPlant); its
  // bugs of memory and time in contained runs (tests/cli/test_fuzz_attention_containment.cpp).
  const std::vector<PlantedBug> covered = {
      PlantedBug::drop_last_key_tile, PlantedBug::causal_off_by_one,
      PlantedBug::running_max_init_zero, PlantedBug::skip_rescale, PlantedBug::masked_row_nan,
      PlantedBug::partial_last_query_tile_unwritten, PlantedBug::causal_top_left,
      PlantedBug::scale_hardcoded_64, PlantedBug::gqa_modulo, PlantedBug::pv_fp16_accumulation,
      PlantedBug::batch_stride_unpadded, PlantedBug::o_with_q_strides, PlantedBug::v_with_k_strides,
      PlantedBug::pairs_past_grid_limit_dropped, PlantedBug::query_rows_past_grid_limit_dropped,
      PlantedBug::no_max_subtraction, PlantedBug::read_past_seq_len_k, PlantedBug::stale_row_sum,
      PlantedBug::scale_ignored, PlantedBug::single_key_wrong_kv_head,
      PlantedBug::split_kv_input_dtype_combine, PlantedBug::output_truncation,
      PlantedBug::flaky_last_ulp, PlantedBug::varlen_offset_wrong_end,
      PlantedBug::block_table_logical_page, PlantedBug::window_edge_off_by_one,
      PlantedBug::softcap_before_scale, PlantedBug::alibi_top_left, PlantedBug::lse_log2,
      PlantedBug::split_kv_merge_ignores_lse, PlantedBug::query_scaled_in_place,
      PlantedBug::inputs_zeroed_before_compute, PlantedBug::block_table_rewritten,
      PlantedBug::alibi_slopes_zeroed, PlantedBug::cu_seqlens_emptied,
      PlantedBug::key_written_past_end, PlantedBug::output_written_far_past_end,
      PlantedBug::lse_written_far_past_end, PlantedBug::workspace_leaked_per_call,
      PlantedBug::hangs_on_row_without_keys, PlantedBug::slow_extra_pass,
      PlantedBug::slow_extra_pass_1_in_2, PlantedBug::slow_extra_pass_1_in_4,
      PlantedBug::slow_extra_pass_1_in_8, PlantedBug::slow_extra_pass_1_in_12,
      // the backward's: EveryPlant/CpuFlashBackwardPlant
      // (tests/kernels/test_cpu_flash_backward.cpp)
      PlantedBug::backward_gqa_modulo, PlantedBug::backward_rowsum_dropped,
      PlantedBug::backward_rowsum_from_next_row, PlantedBug::backward_softcap_slope_forgotten,
      PlantedBug::backward_mask_not_applied, PlantedBug::backward_lse_log2,
      PlantedBug::backward_dk_unscaled, PlantedBug::backward_varlen_key_offset,
      PlantedBug::backward_dq_last_key_tile_only,
      // fp8 inputs'
      PlantedBug::fp8_k_descale_for_v, PlantedBug::fp8_descale_by_query_head,
      PlantedBug::fp8_descale_twice, PlantedBug::fp8_e5m2_read_as_e4m3,
      PlantedBug::fp8_p_rounded_to_e4m3, PlantedBug::fp8_subnormals_as_normals,
      PlantedBug::fp8_dequantized_to_output};
  const std::span<const PlantedBug> carried = cpu_flash_kernel().plants();
  EXPECT_EQ(std::vector<PlantedBug>(carried.begin(), carried.end()), covered);
}

}  // namespace
}  // namespace attnfuzz
