// SPDX-License-Identifier: BSD-3-Clause
// fp8 inputs are quantized as inference quantizes them: each group's largest element lands on the
// format's maximum, every element decodes, times its group's factor, to within one fp8 rounding of
// what was drawn, the factors are per tensor or per (batch, KV head) as the case says, and
// everything outside the tensor holds the fp8 dtype's poison.
#include "case/fp8_quantization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "case/attention_case.h"
#include "case/data_distribution.h"

namespace attnfuzz {
namespace {

struct Form {
  Dtype output;
  InputStorage storage;
  Descale descale;
};

class Fp8Quantization : public ::testing::TestWithParam<Form> {};

std::string form_name(const Form& form) {
  return std::string(dtype_name(form.output)) + "_" +
         std::string(input_storage_name(form.storage)) + "_" +
         std::string(descale_name(form.descale));
}

INSTANTIATE_TEST_SUITE_P(
    EveryForm, Fp8Quantization,
    ::testing::Values(Form{Dtype::fp16, InputStorage::e4m3, Descale::none},
                      Form{Dtype::bf16, InputStorage::e4m3, Descale::per_tensor},
                      Form{Dtype::bf16, InputStorage::e4m3, Descale::per_kv_head},
                      Form{Dtype::fp16, InputStorage::e5m2, Descale::none},
                      Form{Dtype::fp16, InputStorage::e5m2, Descale::per_kv_head},
                      Form{Dtype::bf16, InputStorage::e5m2, Descale::per_tensor}),
    [](const auto& info) { return form_name(info.param); });

// A GQA case whose three inputs are all stored as `form` says, with padded rows.
AttentionCase fp8_case(const Form& form, DataDistribution data) {
  AttentionCase attention_case;
  attention_case.batch = 2;
  attention_case.heads = 6;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 37;
  attention_case.seq_len_k = 45;
  attention_case.head_dim = 32;
  attention_case.row_padding = 3;
  attention_case.dtype = form.output;
  attention_case.data = data;
  attention_case.q_storage = attention_case.k_storage = attention_case.v_storage = form.storage;
  attention_case.descale = form.descale;
  return attention_case;
}

TEST_P(Fp8Quantization, EachElementIsOneFp8RoundingOfWhatWasDrawnInTheCasesDtype) {
  const Form form = GetParam();
  const Dtype fp8 = storage_dtype(form.storage, form.output);
  const DtypeTraits& traits = traits_of(fp8);
  for (const DataDistribution data : {DataDistribution::normal, DataDistribution::large_scores,
                                      DataDistribution::value_outliers}) {
    AttentionCase quantized_case = fp8_case(form, data);
    AttentionCase drawn_case = quantized_case;
    drawn_case.q_storage = drawn_case.k_storage = drawn_case.v_storage = InputStorage::same;
    drawn_case.descale = Descale::none;
    const AttentionProblem problem = problem_of(quantized_case);
    const AttentionProblem drawn_problem = problem_of(drawn_case);
    const AttentionInputs inputs = generate_inputs(problem, data, 5);
    const AttentionInputs drawn = generate_inputs(drawn_problem, data, 5);
    const struct {
      const std::vector<std::uint16_t>& patterns;
      const std::vector<std::uint16_t>& values;
      const std::vector<float>& descale;
      TensorStrides strides;
      std::int64_t seq_len, heads, group;
    } tensors[] = {{inputs.q, drawn.q, inputs.q_descale, problem.q_strides, problem.seq_len_q,
                    problem.heads, problem.group_size()},
                   {inputs.k, drawn.k, inputs.k_descale, problem.k_strides, problem.seq_len_k,
                    problem.kv_heads, 1},
                   {inputs.v, drawn.v, inputs.v_descale, problem.v_strides, problem.seq_len_k,
                    problem.kv_heads, 1}};
    for (const auto& tensor : tensors) {
      ASSERT_EQ(tensor.patterns.size(), tensor.values.size());
      ASSERT_EQ(tensor.descale.size(),
                form.descale == Descale::none
                    ? 0u
                    : static_cast<std::size_t>(problem.batch * problem.kv_heads));
      std::set<float> factors(tensor.descale.begin(), tensor.descale.end());
      if (form.descale == Descale::per_tensor) {
        EXPECT_EQ(factors.size(), 1u);
      }
      if (form.descale == Descale::per_kv_head) {
        EXPECT_GT(factors.size(), 1u) << "each group has its own largest element";
      }
      std::vector<bool> inside(tensor.patterns.size(), false);
      std::vector<float> group_largest(static_cast<std::size_t>(problem.batch * problem.kv_heads),
                                       0.0f);
      for (std::int64_t b = 0; b < problem.batch; ++b) {
        for (std::int64_t s = 0; s < tensor.seq_len; ++s) {
          for (std::int64_t h = 0; h < tensor.heads; ++h) {
            const std::int64_t group = b * problem.kv_heads + h / tensor.group;
            const float factor =
                descale_at(tensor.descale.empty() ? nullptr : tensor.descale.data(),
                           problem.kv_heads, b, h / tensor.group);
            for (std::int64_t d = 0; d < problem.head_dim; ++d) {
              const auto at = static_cast<std::size_t>(
                  b * tensor.strides.batch + s * tensor.strides.seq + h * tensor.strides.head + d);
              inside[at] = true;
              const double exact = dtype_to_float(tensor.values[at], form.output);
              const double value = static_cast<double>(dtype_to_float(tensor.patterns[at], fp8)) *
                                   static_cast<double>(factor);
              ASSERT_TRUE(std::isfinite(value)) << at;
              group_largest[static_cast<std::size_t>(group)] =
                  std::max(group_largest[static_cast<std::size_t>(group)],
                           std::fabs(dtype_to_float(tensor.patterns[at], fp8)));
              // Saturated beyond the format's range without factors; else one rounding of x / d
              // (relative u, or half a subnormal step), then x / d itself one float rounding.
              const double target = std::min(std::fabs(exact), traits.max_finite * factor);
              const double allowed =
                  (traits.unit_roundoff() + 0x1p-23) * target + traits.min_subnormal / 2.0 * factor;
              ASSERT_LE(std::fabs(std::fabs(value) - target), allowed)
                  << "element " << at << ": drawn " << exact << ", quantized " << value;
            }
          }
        }
      }
      if (form.descale != Descale::none) {
        // The largest element of each group (of the whole tensor per tensor) is the format's max.
        const float overall = *std::max_element(group_largest.begin(), group_largest.end());
        EXPECT_EQ(overall, static_cast<float>(traits.max_finite));
        if (form.descale == Descale::per_kv_head) {
          for (const float largest : group_largest) {
            EXPECT_EQ(largest, static_cast<float>(traits.max_finite));
          }
        }
      }
      for (std::size_t at = 0; at < tensor.patterns.size(); ++at) {
        if (!inside[at]) {
          ASSERT_EQ(tensor.patterns[at], traits.poison_bits) << at;
        }
      }
    }
  }
}

TEST(Fp8Quantization, WithoutFactorsValuesPastTheFormatsRangeSaturate) {
  // value_outliers draws V elements of thousands: e4m3 holds at most 448.
  const AttentionProblem problem = problem_of(
      fp8_case({Dtype::fp16, InputStorage::e4m3, Descale::none}, DataDistribution::value_outliers));
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::value_outliers, 5);
  int saturated = 0;
  for (const std::uint16_t pattern : inputs.v) {
    if ((pattern & 0x7Fu) == 0x7Eu) ++saturated;
  }
  EXPECT_GT(saturated, 0);
  EXPECT_TRUE(inputs.v_descale.empty());
}

TEST(Fp8Quantization, AnAllZeroGroupKeepsAFactorOfOne) {
  std::vector<std::uint16_t> zeros(64, 0);
  const TensorShape shape{1, 2, 2, 16, TensorStrides{64, 32, 16}};
  const QuantizedTensor quantized =
      quantize_to_fp8(zeros, shape, Dtype::fp16, Dtype::e4m3, Descale::per_kv_head, 2, 1);
  ASSERT_EQ(quantized.descale.size(), 2u);
  EXPECT_EQ(quantized.descale[0], 1.0f);
  EXPECT_EQ(quantized.descale[1], 1.0f);
  for (const std::uint16_t pattern : quantized.patterns) EXPECT_EQ(pattern, 0u);
}

TEST(Fp8Quantization, OnlyTheTensorsStoredAsFp8AreQuantized) {
  AttentionCase kv_cache =
      fp8_case({Dtype::bf16, InputStorage::e5m2, Descale::per_tensor}, DataDistribution::normal);
  kv_cache.q_storage = InputStorage::same;
  AttentionCase plain = kv_cache;
  plain.k_storage = plain.v_storage = InputStorage::same;
  plain.descale = Descale::none;
  const AttentionInputs quantized =
      generate_inputs(problem_of(kv_cache), DataDistribution::normal, 9);
  const AttentionInputs drawn = generate_inputs(problem_of(plain), DataDistribution::normal, 9);
  EXPECT_EQ(quantized.q, drawn.q);
  EXPECT_TRUE(quantized.q_descale.empty());
  EXPECT_NE(quantized.k, drawn.k);
  EXPECT_EQ(quantized.k_descale.size(), 4u);
  EXPECT_EQ(quantized.v_descale.size(), 4u);
}

}  // namespace
}  // namespace attnfuzz
