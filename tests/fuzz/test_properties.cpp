// SPDX-License-Identifier: BSD-3-Clause
// The property engine: every property holds for the correct kernel on random cases, and for
// correct kernels of other arithmetic (an order of summation that follows the shape, as a BLAS's
// does; a nondeterministic one under --allow-nondeterminism); the search finds every planted bug
// from a clean start, shrinks it, saves it, and the saved case replays the failure.
#include "fuzz/properties.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <vector>

#include "case/case_codec.h"
#include "core/dtype.h"
#include "core/problem_features.h"
#include "fuzz/case_generator.h"
#include "kernels/kernel_registry.h"
#include "matrix/case_file.h"
#include "support/cpu_settings.h"
#include "support/printers.h"
#include "support/temporary_folder.h"

namespace attnfuzz {
namespace {

// Small cases of every distribution, with injected values and other scales; without other head
// dims or long rows: no more than the built-in kernels support.
rc::Gen<AttentionCase> any_small_case(std::int64_t max_seq_len) {
  return small_case({.max_seq_len = max_seq_len,
                     .distributions = {},
                     .injections = true,
                     .other_scales = true,
                     .long_rows = false,
                     .other_head_dims = false});
}

class EveryProperty : public ::testing::TestWithParam<PropertyInfo> {};

TEST_P(EveryProperty, HoldsForTheCorrectKernelOnRandomCases) {
  // Any case, not only those the property's own generator draws: replayed cases reach every
  // property. Softmax scales far from the default included (they once broke key_shift, whose
  // shifted keys were rounded where the data were not small integers).
  const Property property = GetParam().property;
  const rc::Gen<AttentionCase> generator = any_small_case(200);
  int judged = 0;
  for (int index = 0; index < 300; ++index) {
    const AttentionCase attention_case = generator(rc::Random(7919 * (index + 1)), 100).value();
    const PropertyCheck check = check_property(property, attention_case, cpu_settings());
    ASSERT_FALSE(check.failure.has_value())
        << describe_case(attention_case) << ": " << *check.failure;
    judged += check.judged ? 1 : 0;
  }
  // Held where judged, and judged often enough to mean it (not a pass by cases it skips).
  EXPECT_GE(judged, 100) << "of 300 cases";
}

TEST(PropertyCheck, ACaseTheKernelCannotRunIsNotJudgedByAnyProperty) {
  AttentionCase unsupported;
  unsupported.head_dim = 80;  // cpu_flash has no tile configuration for it
  for (const PropertyInfo& info : kProperties) {
    const PropertyCheck check = check_property(info.property, unsupported, cpu_settings());
    EXPECT_FALSE(check.judged) << info.name;
    EXPECT_FALSE(check.failure.has_value()) << info.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Properties, EveryProperty, ::testing::ValuesIn(kProperties),
                         [](const auto& info) { return std::string(info.param.name); });

// A correct host attention (fp32 scores, softmax and P V, the output rounded once) whose order of
// summation over the keys is not fixed: reversed when the problem has fewer key/value heads than
// query heads (`by_shape`, as a BLAS picks another blocking for another shape), or on every second
// call (`by_call`, as atomics make it). Either gives other bits than its twin run, not other
// values beyond rounding.
class ReorderingAttention final : public AttentionKernel {
 public:
  enum class Reorder { by_shape, by_call };
  ReorderingAttention(std::string name, Reorder reorder)
      : name_(std::move(name)), reorder_(reorder) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "test kernel: key order not fixed"; }
  std::string capabilities() const override { return "dense problems"; }
  ExecutionSite site() const override { return ExecutionSite::host; }
  std::span<const PlantedBug> plants() const override { return {}; }
  SupportVerdict supports(const AttentionProblem& problem) const override {
    if (features_of(problem) != 0) return SupportVerdict::no("dense problems only");
    return SupportVerdict::yes();
  }
  void forward(const AttentionProblem& p, const AttentionTensors& t, PlantedBug) const override {
    const bool reversed =
        reorder_ == Reorder::by_shape ? p.kv_heads < p.heads : calls_.fetch_add(1) % 2 == 1;
    std::vector<float> scores(static_cast<std::size_t>(p.seq_len_k));
    std::vector<float> output(static_cast<std::size_t>(p.head_dim));
    for (std::int64_t b = 0; b < p.batch; ++b) {
      for (std::int64_t h = 0; h < p.heads; ++h) {
        const std::int64_t kv = h / p.group_size();
        for (std::int64_t i = 0; i < p.seq_len_q; ++i) {
          const std::uint16_t* q =
              t.q + b * p.q_strides.batch + i * p.q_strides.seq + h * p.q_strides.head;
          const std::int64_t visible =
              p.causal ? std::clamp<std::int64_t>(i + p.seq_len_k - p.seq_len_q + 1, 0, p.seq_len_k)
                       : p.seq_len_k;
          const auto key_at = [&](std::int64_t n) { return reversed ? visible - 1 - n : n; };
          float row_max = -INFINITY, row_sum = 0.0f;
          for (std::int64_t n = 0; n < visible; ++n) {
            const std::int64_t j = key_at(n);
            const std::uint16_t* k =
                t.k + b * p.k_strides.batch + j * p.k_strides.seq + kv * p.k_strides.head;
            float dot = 0.0f;
            for (std::int64_t d = 0; d < p.head_dim; ++d) {
              dot += dtype_to_float(q[d], p.dtype) * dtype_to_float(k[d], p.dtype);
            }
            scores[j] = dot * static_cast<float>(p.softmax_scale);
            row_max = std::max(row_max, scores[j]);
          }
          std::fill(output.begin(), output.end(), 0.0f);
          for (std::int64_t n = 0; n < visible; ++n) {
            const std::int64_t j = key_at(n);
            const float weight = std::exp(scores[j] - row_max);
            row_sum += weight;
            const std::uint16_t* v =
                t.v + b * p.v_strides.batch + j * p.v_strides.seq + kv * p.v_strides.head;
            for (std::int64_t d = 0; d < p.head_dim; ++d)
              output[d] += weight * dtype_to_float(v[d], p.dtype);
          }
          std::uint16_t* o =
              t.o + b * p.o_strides.batch + i * p.o_strides.seq + h * p.o_strides.head;
          for (std::int64_t d = 0; d < p.head_dim; ++d) {
            o[d] = float_to_dtype(visible == 0 ? 0.0f : output[d] / row_sum, p.dtype);
          }
        }
      }
    }
  }

 private:
  std::string name_;
  Reorder reorder_;
  mutable std::atomic<std::uint64_t> calls_{0};
};

const AttentionKernel& reordering_kernel(std::string_view name, ReorderingAttention::Reorder how) {
  if (const AttentionKernel* registered = find_kernel(name)) return *registered;
  return add_kernel(std::make_unique<ReorderingAttention>(std::string(name), how));
}

RunSettings settings_for(const AttentionKernel& kernel) {
  RunSettings settings = cpu_settings();
  settings.kernel = std::string(kernel.name());
  return settings;
}

// How many of `count` random cases `property` judged, and the first failure if any.
struct Tally {
  int judged = 0;
  std::optional<std::string> failure;
};
Tally check_random_cases(Property property, const RunSettings& settings, int count) {
  const rc::Gen<AttentionCase> generator = any_small_case(150);
  Tally tally;
  for (int index = 0; index < count && !tally.failure; ++index) {
    AttentionCase attention_case = generator(rc::Random(104729 * (index + 1)), 100).value();
    if (property == Property::gqa_equals_mha) {  // as the search's generator makes them: GQA
      attention_case.heads = attention_case.kv_heads * 2;
    }
    const PropertyCheck check = check_property(property, attention_case, settings);
    tally.judged += check.judged ? 1 : 0;
    if (check.failure) tally.failure = describe_case(attention_case) + ": " + *check.failure;
  }
  return tally;
}

TEST(PropertyCheck, GqaEqualsMhaHoldsWithinTheBoundForAKernelWhoseOrderFollowsTheShape) {
  const AttentionKernel& kernel =
      reordering_kernel("test_order_by_shape", ReorderingAttention::Reorder::by_shape);
  const Tally bounded = check_random_cases(Property::gqa_equals_mha, settings_for(kernel), 200);
  EXPECT_FALSE(bounded.failure.has_value()) << *bounded.failure;
  EXPECT_GE(bounded.judged, 100);
  // The bitwise form, which a kernel declaring shape-independent arithmetic asks for, would have
  // failed this correct kernel: the bound is not idle.
  RunSettings declared = settings_for(kernel);
  declared.shape_independent_arithmetic = true;
  const Tally bitwise = check_random_cases(Property::gqa_equals_mha, declared, 200);
  ASSERT_TRUE(bitwise.failure.has_value());
  EXPECT_THAT(*bitwise.failure, ::testing::HasSubstr("must be bitwise equal"));
}

TEST(PropertyCheck, ANondeterministicKernelAllowedToBeHoldsEveryPropertyButDeterminismIsNotJudged) {
  const AttentionKernel& kernel =
      reordering_kernel("test_order_by_call", ReorderingAttention::Reorder::by_call);
  RunSettings allowed = settings_for(kernel);
  allowed.allow_nondeterminism = true;
  for (const PropertyInfo& info : kProperties) {
    if (info.property == Property::matches_oracle) continue;  // the case runner's, tested there
    if (info.pass == PropertyPass::backward) continue;        // the kernel has no backward pass
    const Tally tally = check_random_cases(info.property, allowed, 60);
    EXPECT_FALSE(tally.failure.has_value()) << info.name << ": " << *tally.failure;
    if (info.property == Property::determinism) {
      EXPECT_EQ(tally.judged, 0);
    } else {
      EXPECT_GT(tally.judged, 0) << info.name;
    }
  }
  // Not allowed, the same kernel fails determinism.
  const Tally strict = check_random_cases(Property::determinism, settings_for(kernel), 60);
  ASSERT_TRUE(strict.failure.has_value());
  EXPECT_THAT(*strict.failure, ::testing::HasSubstr("on a second run"));
}

// The saved regressions go to a folder of the test's own (TemporaryFolder).
class SearchFindsPlant : public TemporaryFolder,
                         public ::testing::WithParamInterface<PlantedBugInfo> {};

TEST_P(SearchFindsPlant, WithinItsBudgetAndTheSavedMinimalCaseReplaysTheFailure) {
  if (!cpu_flash_kernel().carries(GetParam().bug)) GTEST_SKIP() << "not a cpu_flash plant";
  if (GetParam().detector != PlantDetector::comparison) {
    GTEST_SKIP() << GetParam().name << " leaves the outputs as they are: not this test's to find";
  }
  PropertySettings settings;
  settings.run = cpu_settings(GetParam().bug);
  // A case past a grid launch limit is 1 draw in 64, and it and each of its shrinking steps run
  // 65,536 blocks or more (about half a second): those plants take 18 to 29 s on an idle machine
  // (docs/detection.md), so they get room for a busy one.
  const bool past_grid_limit = GetParam().bug == PlantedBug::pairs_past_grid_limit_dropped ||
                               GetParam().bug == PlantedBug::query_rows_past_grid_limit_dropped;
  settings.budget_seconds = past_grid_limit ? 180.0 : 60.0;
  settings.regressions_dir = path("regressions");
  settings.stop_at_first_failure = true;
  std::ostringstream log;
  const std::vector<PropertyOutcome> outcomes = run_properties(settings, log);

  const PropertyOutcome* found = nullptr;
  for (const PropertyOutcome& outcome : outcomes) {
    if (outcome.minimal_case) found = &outcome;
  }
  ASSERT_NE(found, nullptr) << "no property caught " << GetParam().name << "\n" << log.str();
  EXPECT_NE(log.str().find("replay: fuzz_attention --properties --property"), std::string::npos);
  ASSERT_TRUE(std::filesystem::exists(found->saved_to)) << found->saved_to;

  const std::vector<AttentionCase> saved = load_case_file(found->saved_to);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_TRUE(check_property(found->property, saved[0], settings.run).failure.has_value())
      << "the saved case no longer fails with the plant";
  EXPECT_TRUE(check_property(found->property, saved[0], cpu_settings()).held())
      << "the saved case fails without the plant: not the plant's fault";
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, SearchFindsPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(PropertySearch, ShrinksADroppedKeyTileToOneQueryAndOneKey) {
  // Any seq_len_k below the tile is dropped whole, so the smallest failing case is 1 x 1.
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("attnfuzz_shrink_" + std::to_string(::getpid()));
  PropertySettings settings;
  settings.run = cpu_settings(PlantedBug::drop_last_key_tile);
  settings.properties = {Property::matches_oracle};
  settings.budget_seconds = 30.0;
  settings.regressions_dir = folder;
  std::ostringstream log;
  const std::vector<PropertyOutcome> outcomes = run_properties(settings, log);
  std::filesystem::remove_all(folder);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].minimal_case.has_value()) << log.str();
  const AttentionCase& minimal = *outcomes[0].minimal_case;
  EXPECT_EQ(minimal.batch, 1);
  EXPECT_EQ(minimal.heads, 1);
  EXPECT_EQ(minimal.seq_len_q, 1);
  EXPECT_EQ(minimal.seq_len_k, 1);
  EXPECT_EQ(minimal.head_dim, 64);
  EXPECT_EQ(minimal.data, DataDistribution::normal);
}

TEST(PropertySearch, ParsesEveryPropertyNameAndRejectsOthers) {
  for (const PropertyInfo& info : kProperties) EXPECT_EQ(parse_property(info.name), info.property);
  EXPECT_FALSE(parse_property("no_such_property").has_value());
}

}  // namespace
}  // namespace attnfuzz
