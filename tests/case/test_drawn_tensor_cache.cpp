// SPDX-License-Identifier: BSD-3-Clause
// The cache of drawn tensors: a case whose data is a recent case's copies the draws, and what it
// copies is exactly what it would have drawn; anything the data depends on draws again; the cache
// keeps the most recent tensors within its size.
#include "case/drawn_tensor_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"

namespace attnfuzz {
namespace {

AttentionCase small_case() {
  AttentionCase attention_case;
  attention_case.id = "test/0";
  attention_case.batch = 2;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 33;
  attention_case.seq_len_k = 47;
  attention_case.head_dim = 40;
  attention_case.seed = 11;
  return attention_case;
}

AttentionInputs generate(const AttentionCase& attention_case) {
  return generate_inputs(problem_of(attention_case), attention_case.data, attention_case.seed,
                         attention_case.injection);
}

// Runs `body` on a thread of its own: a cache of its own, empty at the start.
void on_a_fresh_thread(const std::function<void()>& body) {
  std::thread thread(body);
  thread.join();
}

TEST(DrawnTensorCache, ACaseDifferingOnlyInWhatTheDataDoesNotDependOnCopiesExactlyItsDraws) {
  AttentionCase other = small_case();
  other.layout = Layout::bhsd;
  other.row_padding = 3;
  other.window_left = 5;
  other.softmax_scale = 0.3;
  AttentionInputs drawn, copied;
  on_a_fresh_thread([&] { drawn = generate(other); });
  on_a_fresh_thread([&] {
    generate(small_case());
    const DrawnTensorCacheCounts before = drawn_tensor_cache_counts();
    copied = generate(other);
    const DrawnTensorCacheCounts after = drawn_tensor_cache_counts();
    EXPECT_EQ(after.reused - before.reused, 3) << "Q, K and V";
    EXPECT_EQ(after.drawn, before.drawn);
  });
  EXPECT_EQ(copied.q, drawn.q);
  EXPECT_EQ(copied.k, drawn.k);
  EXPECT_EQ(copied.v, drawn.v);
}

TEST(DrawnTensorCache, ASeedAShapeADtypeOrADistributionOfItsOwnDrawsAgain) {
  std::vector<AttentionCase> others(5, small_case());
  others[0].seed = 12;
  others[1].seq_len_k = 48;
  others[2].dtype = Dtype::bf16;
  others[3].data = DataDistribution::uniform;
  others[4].causal = true;  // in the stream's key
  for (const AttentionCase& other : others) {
    AttentionInputs drawn, after_base;
    on_a_fresh_thread([&] { drawn = generate(other); });
    on_a_fresh_thread([&] {
      generate(small_case());
      const DrawnTensorCacheCounts before = drawn_tensor_cache_counts();
      after_base = generate(other);
      EXPECT_EQ(drawn_tensor_cache_counts().reused, before.reused);
    });
    EXPECT_EQ(after_base.q, drawn.q);
    EXPECT_EQ(after_base.k, drawn.k);
    EXPECT_EQ(after_base.v, drawn.v);
  }
}

TEST(DrawnTensorCache, KeepsTheMostRecentTensorsWithinItsSizeAndNoneLargerThanIt) {
  on_a_fresh_thread([] {
    const TensorShape shape{1, 1, 1, 1, {}};
    const auto key_of = [&](std::uint64_t seed) {
      TensorDraws draws;
      draws.stream.key = seed;
      return DrawnTensorKey(draws, shape, Dtype::fp16);
    };
    int draws = 0;
    const auto of_size = [&](std::int64_t elements) {
      return [&draws, elements] {
        ++draws;
        return std::vector<std::uint16_t>(static_cast<std::size_t>(elements), 1);
      };
    };
    const std::int64_t half = kDrawnTensorCacheElements / 2;
    drawn_in_logical_order(key_of(1), of_size(half));
    drawn_in_logical_order(key_of(2), of_size(half));
    drawn_in_logical_order(key_of(1), of_size(half));  // kept: both fit
    EXPECT_EQ(draws, 2);
    drawn_in_logical_order(key_of(3), of_size(half));  // evicts 2, the least recent
    drawn_in_logical_order(key_of(1), of_size(half));
    EXPECT_EQ(draws, 3);
    drawn_in_logical_order(key_of(2), of_size(half));
    EXPECT_EQ(draws, 4);
    drawn_in_logical_order(key_of(4), of_size(kDrawnTensorCacheElements + 1));
    drawn_in_logical_order(key_of(4), of_size(kDrawnTensorCacheElements + 1));
    EXPECT_EQ(draws, 6) << "too large to keep";
    drawn_in_logical_order(key_of(2), of_size(half));
    EXPECT_EQ(draws, 6) << "and it evicted nothing";
  });
}

}  // namespace
}  // namespace attnfuzz
