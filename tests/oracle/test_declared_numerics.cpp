// SPDX-License-Identifier: BSD-3-Clause
// --accumulation's, --probabilities' and --dequantize-to's values: what each declares, that its
// name reads back as itself, and that anything else is refused.
#include "oracle/declared_numerics.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace attnfuzz {
namespace {

TEST(DeclaredNumerics, Fp32IsTheLockedNumericsAndDeclaresNothing) {
  const std::optional<DeclaredNumerics> numerics = parse_accumulation("fp32");
  ASSERT_TRUE(numerics);
  EXPECT_FALSE(numerics->declared());
  EXPECT_EQ(numerics->accumulation_unit_roundoff(Dtype::fp16), kFloat32UnitRoundoff);
  EXPECT_EQ(accumulation_name(*numerics), "fp32");
  EXPECT_EQ(accumulation_name(DeclaredNumerics{}), "fp32");
}

TEST(DeclaredNumerics, ADtypeDeclaresItsUnitRoundoffForEveryInputDtype) {
  const std::optional<DeclaredNumerics> fp16 = parse_accumulation("fp16");
  ASSERT_TRUE(fp16);
  EXPECT_TRUE(fp16->declared());
  EXPECT_EQ(fp16->keys_per_rounding, 1);
  EXPECT_EQ(fp16->accumulation_unit_roundoff(Dtype::bf16), 0x1p-11);
  EXPECT_EQ(fp16->accumulation_half_subnormal(Dtype::bf16), 0x1p-25);
  EXPECT_EQ(parse_accumulation("bf16")->accumulation_unit_roundoff(Dtype::fp16), 0x1p-8);
}

TEST(DeclaredNumerics, InputFollowsEachCasesDtype) {
  const std::optional<DeclaredNumerics> input = parse_accumulation("input/32");
  ASSERT_TRUE(input);
  EXPECT_EQ(input->keys_per_rounding, 32);
  EXPECT_EQ(input->accumulator_for(Dtype::fp16), Dtype::fp16);
  EXPECT_EQ(input->accumulator_for(Dtype::bf16), Dtype::bf16);
  EXPECT_EQ(input->accumulation_unit_roundoff(Dtype::bf16), 0x1p-8);
}

TEST(DeclaredNumerics, EachNameReadsBackAsWhatItDeclares) {
  for (const char* name : {"fp32", "fp16", "bf16", "input", "fp16/64", "bf16/1", "input/16"}) {
    const std::optional<DeclaredNumerics> numerics = parse_accumulation(name);
    ASSERT_TRUE(numerics) << name;
    const std::string expected = std::string(name) == "bf16/1" ? "bf16" : name;
    EXPECT_EQ(accumulation_name(*numerics), expected);
  }
}

TEST(DeclaredNumerics, AnythingElseIsRefused) {
  for (const char* name : {"", "fp8", "FP16", "fp32/16", "fp16/", "fp16/0", "fp16/-4", "fp16/1e3",
                           "fp16/64x", "input/2000000", "fp16 /64", "/64", "e4m3", "e5m2/16"}) {
    EXPECT_FALSE(parse_accumulation(name)) << name;
  }
}

TEST(DeclaredNumerics, ProbabilitiesAreTheOutputsUnlessDeclared) {
  ProblemShape fp8_kv;
  fp8_kv.dtype = Dtype::bf16;
  fp8_kv.v_storage = InputStorage::e5m2;
  EXPECT_EQ(DeclaredNumerics{}.probability_dtype(fp8_kv), Dtype::bf16);
  EXPECT_EQ(probabilities_name(DeclaredNumerics{}), "output");
  const std::optional<DeclaredNumerics> follows_v = parse_probabilities("v", DeclaredNumerics{});
  ASSERT_TRUE(follows_v);
  EXPECT_TRUE(follows_v->declared());
  EXPECT_FALSE(follows_v->accumulation_declared());
  EXPECT_EQ(follows_v->probability_dtype(fp8_kv), Dtype::e5m2);
  fp8_kv.v_storage = InputStorage::same;
  EXPECT_EQ(follows_v->probability_dtype(fp8_kv), Dtype::bf16);
  EXPECT_EQ(parse_probabilities("e4m3", DeclaredNumerics{})->probability_dtype(fp8_kv),
            Dtype::e4m3);
  const std::optional<DeclaredNumerics> output = parse_probabilities("output", *follows_v);
  ASSERT_TRUE(output);
  EXPECT_FALSE(output->declared());
}

TEST(DeclaredNumerics, ProbabilitiesAndAccumulationAreDeclaredApart) {
  const std::optional<DeclaredNumerics> both =
      parse_probabilities("e4m3", *parse_accumulation("fp16/64"));
  ASSERT_TRUE(both);
  EXPECT_EQ(accumulation_name(*both), "fp16/64");
  EXPECT_EQ(probabilities_name(*both), "e4m3");
  EXPECT_EQ(accumulation_name(*parse_probabilities("v", DeclaredNumerics{})), "fp32");
  for (const char* name : {"output", "v", "fp16", "bf16", "e4m3", "e5m2"}) {
    EXPECT_EQ(probabilities_name(*parse_probabilities(name, DeclaredNumerics{})), name);
  }
  for (const char* name : {"", "V", "fp32", "fp8", "e4m3/16", "input"}) {
    EXPECT_FALSE(parse_probabilities(name, DeclaredNumerics{})) << name;
  }
}

TEST(DeclaredNumerics, DequantizationRoundsOnlyFp8TensorsIntoTheDeclaredDtype) {
  ProblemShape fp8_kv;  // an fp8 KV cache under fp16 queries, dim 64
  fp8_kv.dtype = Dtype::fp16;
  fp8_kv.head_dim = 64;
  fp8_kv.k_storage = fp8_kv.v_storage = InputStorage::e4m3;
  const DeclaredNumerics none;
  EXPECT_FALSE(none.dequantization_declared());
  EXPECT_EQ(none.dequantization_unit_roundoff(fp8_kv, InputStorage::e4m3), 0.0);
  EXPECT_EQ(none.dequantization_norm_padding(fp8_kv, InputStorage::e4m3), 0.0);
  const std::optional<DeclaredNumerics> output = parse_dequantization("output", none);
  ASSERT_TRUE(output);
  EXPECT_TRUE(output->declared());
  EXPECT_EQ(output->dequantization_dtype(fp8_kv), Dtype::fp16);
  EXPECT_EQ(output->dequantization_unit_roundoff(fp8_kv, InputStorage::e4m3), 0x1p-11);
  EXPECT_EQ(output->dequantization_unit_roundoff(fp8_kv, InputStorage::same), 0.0);
  EXPECT_EQ(output->dequantization_half_subnormal(fp8_kv, InputStorage::e5m2), 0x1p-25);
  // sqrt(64) eta / u = 8 * 2^-25 / 2^-11
  EXPECT_EQ(output->dequantization_norm_padding(fp8_kv, InputStorage::e4m3), 0x1p-11);
  EXPECT_EQ(
      parse_dequantization("bf16", none)->dequantization_unit_roundoff(fp8_kv, InputStorage::e4m3),
      0x1p-8);
}

TEST(DeclaredNumerics, DequantizationNamesReadBackAndOthersAreRefused) {
  for (const char* name : {"none", "output", "fp16", "bf16"}) {
    EXPECT_EQ(dequantization_name(*parse_dequantization(name, DeclaredNumerics{})), name);
  }
  for (const char* name : {"", "e4m3", "e5m2", "fp32", "input", "v", "Output"}) {
    EXPECT_FALSE(parse_dequantization(name, DeclaredNumerics{})) << name;
  }
  // Declared apart from the other two.
  const DeclaredNumerics all =
      *parse_dequantization("output", *parse_probabilities("e4m3", *parse_accumulation("fp16/64")));
  EXPECT_EQ(accumulation_name(all), "fp16/64");
  EXPECT_EQ(probabilities_name(all), "e4m3");
  EXPECT_EQ(dequantization_name(all), "output");
}

}  // namespace
}  // namespace attnfuzz
