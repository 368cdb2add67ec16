// SPDX-License-Identifier: BSD-3-Clause
// Fitting a case under the work cap: only as far as needed, the least telling axes first, tail
// tiles and GQA kept while there is room for them, and always under the cap.
#include "case/work_cap.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>

#include "fuzz/case_generator.h"

namespace attnfuzz {
namespace {

AttentionCase shape(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads,
                    std::int64_t seq_len_q, std::int64_t seq_len_k, std::int64_t head_dim) {
  AttentionCase c;
  c.batch = batch;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.seq_len_q = seq_len_q;
  c.seq_len_k = seq_len_k;
  c.head_dim = head_dim;
  c.causal = true;
  c.dtype = Dtype::bf16;
  c.seed = 77;
  return c;
}

TEST(WorkCap, ACaseWithinTheCapIsLeftAsItIs) {
  const AttentionCase c = shape(1, 1, 1, 64, 4096, 64);  // exactly 2^24
  EXPECT_EQ(case_work(c), kCaseWorkCap);
  EXPECT_EQ(fit_to_work_cap(c), c);
}

TEST(WorkCap, BatchGoesFirstAndOnlyAsFarAsNeeded) {
  const AttentionCase fitted = fit_to_work_cap(shape(8, 2, 1, 113, 203, 128));  // 47M
  EXPECT_EQ(fitted.batch, 2);  // 2 x 2 x 113 x 203 x 128 = 11.7M
  EXPECT_EQ(fitted.heads, 2);
  EXPECT_EQ(fitted.seq_len_q, 113);
}

TEST(WorkCap, GqaStaysGqaWhileTheLengthsGiveWay) {
  // Six query heads over three kv heads at 1025 x 1025: GQA with two kv heads of two query heads
  // each survives; the query rows give way by whole tiles, keeping their one-row tail tile.
  const AttentionCase fitted = fit_to_work_cap(shape(2, 6, 3, 1025, 1025, 128));
  EXPECT_EQ(fitted.batch, 1);
  EXPECT_EQ(fitted.kv_heads, 2);
  EXPECT_EQ(fitted.heads, 4);
  EXPECT_EQ(fitted.seq_len_q % 64, 1);
  EXPECT_EQ(fitted.seq_len_k, 1025);
  EXPECT_LE(case_work(fitted), kCaseWorkCap);
}

TEST(WorkCap, LongRowsKeepTheirLengthWhileTheQueryRowsCanGiveWay) {
  // 200 query rows over 4096 keys in two heads (105M): the rows shrink to 8, 200's tail tile.
  const AttentionCase fitted = fit_to_work_cap(shape(1, 2, 1, 200, 4096, 64));
  EXPECT_EQ(fitted.seq_len_k, 4096);
  EXPECT_EQ(fitted.seq_len_q, 8);
  EXPECT_EQ(fitted.heads, 2);
}

TEST(WorkCap, EvenTheLargestShapeFits) {
  const AttentionCase fitted = fit_to_work_cap(shape(48, 64, 8, 16384, 16384, 256));
  EXPECT_LE(case_work(fitted), kCaseWorkCap);
  EXPECT_GE(fitted.seq_len_k, 1);
}

// A paged case of `heads` query and key/value heads, every field not named here its default.
AttentionCase paged(std::int64_t batch, std::int64_t heads, std::int64_t seq_len_k,
                    std::int64_t head_dim, std::int64_t page_size) {
  AttentionCase attention_case;
  attention_case.batch = batch;
  attention_case.heads = attention_case.kv_heads = heads;
  attention_case.seq_len_k = seq_len_k;
  attention_case.head_dim = head_dim;
  attention_case.page_size = page_size;
  return attention_case;
}

TEST(WorkCap, ALargePageOverAFewKeysIsHalvedUntilItsPoolFits) {
  // One key in pages of 16384 rows, eight kv heads of 256: a pool of 2^26 elements a tensor,
  // although the work is a few thousand.
  const AttentionCase attention_case = paged(1, 8, 1, 256, 16384);
  ASSERT_EQ(page_pool_elements(attention_case), std::int64_t{1} << 26);
  const AttentionCase fitted = fit_to_work_cap(attention_case);
  EXPECT_LE(page_pool_elements(fitted), kCaseWorkCap);
  EXPECT_EQ(fitted.page_size, 4096);  // halved only as far as needed
  AttentionCase expected = attention_case;
  expected.page_size = fitted.page_size;
  EXPECT_EQ(fitted, expected) << "only the page size gives way";
}

TEST(WorkCap, APoolOfOneRowPagesStillOverTheCapHasItsKeysGiveWay) {
  // Work of exactly 2^24: pages of one row would hold 2^24 key rows and the spare one.
  AttentionCase attention_case = paged(4, 1, 16384, 256, 16);
  attention_case.seq_len_q = 1;
  ASSERT_EQ(case_work(attention_case), kCaseWorkCap);
  const AttentionCase fitted = fit_to_work_cap(attention_case);
  EXPECT_LE(page_pool_elements(fitted), kCaseWorkCap);
  EXPECT_LE(case_work(fitted), kCaseWorkCap);
  EXPECT_EQ(fitted.page_size, 1);
  EXPECT_EQ(fitted.head_dim, 256);
}

TEST(WorkCap, APoolWidenedByAPackedPlacementStillFits) {
  // Under qkv_packed each pooled row holds the query heads too: one-row pages of 2817 keys at
  // eight heads of 256 are a pool over the cap while the work (5.8e6) is well under it.
  AttentionCase attention_case = paged(1, 8, 2817, 256, 1);
  attention_case.seq_len_q = 1;
  attention_case.placement = Placement::qkv_packed;
  ASSERT_LT(case_work(attention_case), kCaseWorkCap);
  ASSERT_GT(page_pool_elements(attention_case), kCaseWorkCap);
  const AttentionCase fitted = fit_to_work_cap(attention_case);
  EXPECT_LE(page_pool_elements(fitted), kCaseWorkCap);
  EXPECT_EQ(fitted.placement, Placement::qkv_packed);
  EXPECT_EQ(fitted.head_dim, 256);
}

TEST(WorkCap, APagePoolPastInt64Saturates) {
  AttentionCase attention_case;
  attention_case.seq_len_k = 16;
  attention_case.page_size = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(page_pool_elements(attention_case), std::numeric_limits<std::int64_t>::max());
}

RC_GTEST_PROP(WorkCap, EveryCaseFitsAndKeepsItsDataDtypeLayoutAndHeadDim, ()) {
  AttentionCase c = *small_case({.max_seq_len = 8192, .distributions = {}, .injections = true});
  c.batch = *rc::gen::inRange<std::int64_t>(1, 64);
  const AttentionCase fitted = fit_to_work_cap(c);
  RC_ASSERT(case_work(fitted) <= kCaseWorkCap);
  RC_ASSERT(fitted.head_dim == c.head_dim && fitted.dtype == c.dtype && fitted.data == c.data);
  RC_ASSERT(fitted.layout == c.layout && fitted.seed == c.seed && fitted.causal == c.causal);
  RC_ASSERT(fitted.heads % fitted.kv_heads == 0);
  RC_ASSERT(fitted.batch <= c.batch && fitted.heads <= c.heads && fitted.kv_heads <= c.kv_heads);
  RC_ASSERT(fitted.seq_len_q <= c.seq_len_q && fitted.seq_len_k <= c.seq_len_k);
  RC_ASSERT(fitted.batch >= 1 && fitted.seq_len_q >= 1 && fitted.seq_len_k >= 1);
  RC_ASSERT(fit_to_work_cap(fitted) == fitted);  // fitting twice changes nothing
}

}  // namespace
}  // namespace attnfuzz
