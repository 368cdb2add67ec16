// SPDX-License-Identifier: BSD-3-Clause
// A case pattern means what its keys mean in a matrix file: fields, aliases and shorthands read by
// the fields' codecs; the scale as the case runs with it; an unknown key or a value the field
// cannot hold is refused naming the key.
#include "case/case_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace attnfuzz {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

AttentionCase causal_bf16_case() {
  AttentionCase attention_case;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 97;
  attention_case.seq_len_k = 203;
  attention_case.head_dim = 128;
  attention_case.dtype = Dtype::bf16;
  attention_case.causal = true;
  return attention_case;
}

CasePatternProblem problem_of_pattern(const json& where) {
  try {
    CasePattern::from_json(where);
  } catch (const CasePatternProblem& problem) {
    return problem;
  }
  ADD_FAILURE() << "no problem with " << where.dump();
  return {};
}

TEST(CasePattern, AnEmptyPatternMatchesEveryCase) {
  EXPECT_TRUE(CasePattern::from_json(json::object()).matches(AttentionCase{}));
  EXPECT_TRUE(CasePattern().matches(causal_bf16_case()));
}

TEST(CasePattern, MatchesOnlyCasesHoldingEveryValueItNames) {
  const CasePattern pattern = CasePattern::from_json({{"dtype", "bf16"}, {"causal", true}});
  EXPECT_TRUE(pattern.matches(causal_bf16_case()));
  AttentionCase fp16 = causal_bf16_case();
  fp16.dtype = Dtype::fp16;
  EXPECT_FALSE(pattern.matches(fp16));
  AttentionCase not_causal = causal_bf16_case();
  not_causal.causal = false;
  EXPECT_FALSE(pattern.matches(not_causal));
}

TEST(CasePattern, AliasesAndShorthandsMeanWhatTheyMeanInAMatrixFile) {
  EXPECT_TRUE(CasePattern::from_json({{"num_heads", 4}}).matches(causal_bf16_case()));
  EXPECT_FALSE(CasePattern::from_json({{"num_heads", 2}}).matches(causal_bf16_case()));
  // seq_len sets both lengths: it matches a case only where they are equal and that long.
  EXPECT_FALSE(CasePattern::from_json({{"seq_len", 97}}).matches(causal_bf16_case()));
  AttentionCase square = causal_bf16_case();
  square.seq_len_k = 97;
  EXPECT_TRUE(CasePattern::from_json({{"seq_len", 97}}).matches(square));
  // With seq_len_k beside it, seq_len sets only the query length, as in a matrix file: a report's
  // config (seq_len is seq_len_q there) matches its own case.
  EXPECT_TRUE(
      CasePattern::from_json({{"seq_len", 97}, {"seq_len_k", 203}}).matches(causal_bf16_case()));
}

TEST(CasePattern, AReportsWholeConfigMatchesItsOwnCaseAndNoOther) {
  // As a report writes it (parsed from text: its integers are unsigned, as a seed must be).
  json config = json::parse(R"({"batch": 1, "batch_size": 1, "heads": 4, "num_heads": 4,
      "kv_heads": 2, "seq_len": 97, "seq_len_q": 97, "seq_len_k": 203, "head_dim": 128,
      "dtype": "bf16", "causal": true, "data": "normal", "seed": 1, "layout": "bshd",
      "row_padding": 0, "inject": "none"})");
  config["softmax_scale"] = 1.0 / std::sqrt(128.0);
  EXPECT_TRUE(CasePattern::from_json(config).matches(causal_bf16_case()));
  AttentionCase other_seed = causal_bf16_case();
  other_seed.seed = 2;
  EXPECT_FALSE(CasePattern::from_json(config).matches(other_seed));
}

TEST(CasePattern, TheScaleComparesAsTheCaseRunsWithItSoAReportsConfigMatches) {
  const AttentionCase unset_scale = causal_bf16_case();  // runs with 1/sqrt(128)
  EXPECT_TRUE(
      CasePattern::from_json({{"softmax_scale", 1.0 / std::sqrt(128.0)}}).matches(unset_scale));
  EXPECT_FALSE(CasePattern::from_json({{"softmax_scale", 0.5}}).matches(unset_scale));
}

TEST(CasePattern, AVariantOffByDefaultMatchesWhenThePatternSaysOff) {
  EXPECT_TRUE(
      CasePattern::from_json({{"window_left", -1}, {"softcap", 0.0}}).matches(causal_bf16_case()));
  AttentionCase windowed = causal_bf16_case();
  windowed.window_left = 16;
  EXPECT_FALSE(CasePattern::from_json({{"window_left", -1}}).matches(windowed));
  EXPECT_TRUE(CasePattern::from_json({{"window_left", 16}}).matches(windowed));
}

TEST(CasePattern, AnUnknownKeyIsRefusedNamingItAndTheKeysThereAre) {
  const CasePatternProblem problem = problem_of_pattern({{"head_size", 64}});
  EXPECT_EQ(problem.key, "head_size");
  EXPECT_THAT(problem.message, HasSubstr("unknown case key \"head_size\""));
  EXPECT_THAT(problem.message, HasSubstr("head_dim"));
}

TEST(CasePattern, AValueTheFieldCannotHoldIsRefusedNamingTheKey) {
  CasePatternProblem problem = problem_of_pattern({{"dtype", "fp64"}});
  EXPECT_EQ(problem.key, "dtype");
  EXPECT_THAT(problem.message, HasSubstr("fp64"));
  problem = problem_of_pattern({{"head_dim", "64"}});
  EXPECT_EQ(problem.key, "head_dim");
  problem = problem_of_pattern(json::array({1}));
  EXPECT_EQ(problem.key, "");
  EXPECT_THAT(problem.message, HasSubstr("expected an object"));
}

}  // namespace
}  // namespace attnfuzz
