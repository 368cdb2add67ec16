// SPDX-License-Identifier: BSD-3-Clause
// The cache of drawn tensors: a case whose data is a recent case's copies the draws, and what it
// copies is exactly what it would have drawn; anything the data depends on draws again; the cache
// keeps the most recent tensors within its size.
#include "case/drawn_tensor_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
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

// Every distribution, in every form the data takes after the draws (quantized to fp8 with factors,
// placed as varlen or paged rows, with special values injected): drawn cold, or after a case that
// shares its data but not its layout or its window, the inputs are the same.
TEST(DrawnTensorCache, EveryDistributionAndFormOfTheDataIsTheSameDrawnOrCopied) {
  const std::vector<std::function<void(AttentionCase&)>> forms = {
      [](AttentionCase&) {},
      [](AttentionCase& c) {
        c.dtype = Dtype::bf16;
        c.k_storage = InputStorage::e4m3;
        c.v_storage = InputStorage::e5m2;
        c.descale = Descale::per_kv_head;
      },
      [](AttentionCase& c) {
        c.seq_lens_q = {33, 7};
        c.seq_lens_k = {19, 47};
      },
      [](AttentionCase& c) { c.page_size = 16; },
      [](AttentionCase& c) { c.injection = *parse_injection("k:large:5"); },
  };
  for (const DataDistributionInfo& info : kDataDistributions) {
    for (std::size_t form = 0; form < forms.size(); ++form) {
      AttentionCase attention_case = small_case();
      attention_case.data = info.distribution;
      forms[form](attention_case);
      AttentionCase sibling = attention_case;
      sibling.layout = Layout::bhsd;
      sibling.window_left = 3;
      SCOPED_TRACE(std::string(info.name) + ", form " + std::to_string(form));
      AttentionInputs drawn, copied;
      on_a_fresh_thread([&] { drawn = generate(attention_case); });
      on_a_fresh_thread([&] {
        generate(sibling);
        copied = generate(attention_case);
        EXPECT_GT(drawn_tensor_cache_counts().reused, 0);
      });
      EXPECT_EQ(copied.q, drawn.q);
      EXPECT_EQ(copied.k, drawn.k);
      EXPECT_EQ(copied.v, drawn.v);
      EXPECT_EQ(copied.k_descale, drawn.k_descale);
      EXPECT_EQ(copied.v_descale, drawn.v_descale);
    }
  }
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
