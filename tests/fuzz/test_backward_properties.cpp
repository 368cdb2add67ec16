// SPDX-License-Identifier: BSD-3-Clause
// The backward pass's metamorphic properties (fuzz/backward_properties.h). That they hold for
// cpu_flash's backward on random cases is test_properties.cpp's EveryProperty; here, each backward
// plant a dense case shows fails the relation it breaks within the first random cases, naming it,
// and that case holds without the plant; a backward bent where no plant bends one (dV off by a
// constant, dK by its key's index) fails the relation that sees it; a case with a variant is not
// judged.
#include "fuzz/backward_properties.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <memory>
#include <optional>
#include <string>

#include "case/case_codec.h"
#include "core/dtype.h"
#include "fuzz/case_generator.h"
#include "fuzz/properties.h"
#include "kernels/kernel_registry.h"
#include "support/cpu_flash_with_backward_after.h"
#include "support/cpu_settings.h"
#include "support/printers.h"

namespace attnfuzz {
namespace {

// Dense cases as the search's backward properties draw them, up to 160 keys (cpu_flash's backward
// takes keys in tiles of 64, so that some have several).
AttentionCase random_case(int index) {
  const rc::Gen<AttentionCase> generator = small_case({.max_seq_len = 160,
                                                       .distributions = {},
                                                       .injections = true,
                                                       .other_scales = true,
                                                       .long_rows = false,
                                                       .other_head_dims = false});
  AttentionCase attention_case = generator(rc::Random(15485863 * (index + 1)), 100).value();
  attention_case.backward = true;
  return attention_case;
}

// Which relation each backward plant breaks on dense cases, and the start of the reason naming it.
struct BrokenRelation {
  PlantedBug bug;
  Property property;
  const char* reason;
};

constexpr BrokenRelation kBrokenRelations[] = {
    // dK and dV of a head go to another kv head: the group's dV no longer sums to its dO.
    {PlantedBug::backward_gqa_modulo, Property::backward_gradient_sums, "dV summed over the keys"},
    // Without D (or with another row's) a row's dS no longer sums to zero.
    {PlantedBug::backward_rowsum_dropped, Property::backward_gradient_sums,
     "dK summed over the keys"},
    {PlantedBug::backward_rowsum_from_next_row, Property::backward_gradient_sums,
     "dK summed over the keys"},
    // P over masked keys, or exp2 of a natural log: rows that no longer sum to one (and exp2 of
    // a log-sum-exp read too small overflows: a NaN gradient on the first case).
    {PlantedBug::backward_mask_not_applied, Property::backward_gradient_sums,
     "summed over the keys"},
    {PlantedBug::backward_lse_log2, Property::backward_gradient_sums,
     "where the exact gradient is finite"},
    // dK and dQ no longer share the factor scale.
    {PlantedBug::backward_dk_unscaled, Property::backward_gradient_sums, "q . dQ summed"},
    {PlantedBug::backward_dq_last_key_tile_only, Property::backward_gradient_sums, "q . dQ summed"},
    // dQ of the reversed keys sums another last tile.
    {PlantedBug::backward_dq_last_key_tile_only, Property::backward_key_permutation, "dQ["},
};

class BackwardRelation : public ::testing::TestWithParam<BrokenRelation> {};

TEST_P(BackwardRelation, FailsWithThePlantWithinTheFirstRandomCasesAndHoldsWithoutIt) {
  const BrokenRelation& broken = GetParam();
  std::optional<AttentionCase> failing;
  std::string reason;
  for (int index = 0; index < 300 && !failing; ++index) {
    const AttentionCase attention_case = random_case(index);
    const PropertyCheck check =
        check_property(broken.property, attention_case, cpu_settings(broken.bug));
    if (check.failure) {
      failing = attention_case;
      reason = *check.failure;
    }
  }
  ASSERT_TRUE(failing.has_value()) << "no case of 300 failed";
  EXPECT_THAT(reason, ::testing::HasSubstr(broken.reason));
  EXPECT_TRUE(check_property(broken.property, *failing, cpu_settings()).held())
      << describe_case(*failing) << " fails without the plant";
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, BackwardRelation, ::testing::ValuesIn(kBrokenRelations),
                         [](const auto& info) {
                           return std::string(planted_bug_name(info.param.bug)) + "_" +
                                  std::string(
                                      kProperties[static_cast<int>(info.param.property)].name);
                         });

// cpu_flash with its backward bent one way after it has run: dV plus a constant (no longer linear
// in dO), or dK_j plus j/64 (no longer carried with its key when the keys move).
class BentBackward final : public CpuFlashWithBackwardAfter {
 public:
  enum class Bend { dv_offset, dk_key_ramp };
  BentBackward(std::string name, Bend bend) : name_(std::move(name)), bend_(bend) {}
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return "test kernel: cpu_flash, backward bent"; }
  std::string capabilities() const override { return cpu_flash_kernel().capabilities(); }

 protected:
  void after_backward(const AttentionProblem& problem,
                      const BackwardTensors& gradients) const override {
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
        for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
          std::uint16_t* row =
              bend_ == Bend::dv_offset
                  ? gradients.dv + problem.v_row_offset(b, j) + kv * problem.v_strides.head
                  : gradients.dk + problem.k_row_offset(b, j) + kv * problem.k_strides.head;
          const float added = bend_ == Bend::dv_offset ? 0.25f : static_cast<float>(j) / 64.0f;
          for (std::int64_t d = 0; d < problem.head_dim; ++d) {
            row[d] = float_to_dtype(dtype_to_float(row[d], problem.dtype) + added, problem.dtype);
          }
        }
      }
    }
  }

 private:
  std::string name_;
  Bend bend_;
};

// The first failure of `property` on the kernel `name` bent by `bend`, over random cases.
std::optional<std::string> first_failure_bent(Property property, const char* name,
                                              BentBackward::Bend bend) {
  if (find_kernel(name) == nullptr) add_kernel(std::make_unique<BentBackward>(name, bend));
  RunSettings settings = cpu_settings();
  settings.kernel = name;
  for (int index = 0; index < 100; ++index) {
    const PropertyCheck check = check_property(property, random_case(index), settings);
    if (check.failure) return check.failure;
  }
  return std::nullopt;
}

TEST(BackwardProperties, DoublingDoFailsABackwardThatIsNotLinearInIt) {
  const std::optional<std::string> failure = first_failure_bent(
      Property::backward_grad_output_scaling, "test_dv_offset", BentBackward::Bend::dv_offset);
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(*failure, ::testing::HasSubstr("after doubling dO"));
}

TEST(BackwardProperties, ReversingTheKeysFailsADkThatDependsOnWhereItsKeyIs) {
  const std::optional<std::string> failure = first_failure_bent(
      Property::backward_key_permutation, "test_dk_key_ramp", BentBackward::Bend::dk_key_ramp);
  ASSERT_TRUE(failure.has_value());
  EXPECT_THAT(*failure, ::testing::HasSubstr("after reversing the order of the keys"));
  EXPECT_THAT(*failure, ::testing::StartsWith("dK["));
}

TEST(BackwardProperties, JudgeTheBackwardOfACaseWhateverItsFlagAndNoCaseWithAVariant) {
  AttentionCase dense = random_case(3);
  dense.causal = false;
  dense.backward = false;  // a replayed forward case: the backward properties run its backward
  for (const PropertyInfo& info : kProperties) {
    if (info.pass != PropertyPass::backward) continue;
    EXPECT_TRUE(check_property(info.property, dense, cpu_settings()).held()) << info.name;
    AttentionCase windowed = dense;
    windowed.window_left = 3;
    EXPECT_FALSE(check_property(info.property, windowed, cpu_settings()).judged) << info.name;
  }
}

}  // namespace
}  // namespace attnfuzz
