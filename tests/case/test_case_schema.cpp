// SPDX-License-Identifier: BSD-3-Clause
// The case schema (case/case_schema.h) against every form of a case: each row of the table
// reaches the matrix reader, the JSON writer, a report's config, the validity check and the
// problem (or the layout, the data, the kernel) that it claims to change.
#include "case/case_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/case_codec.h"
#include "core/harness_error.h"
#include "fuzz/case_generator.h"
#include "kernels/plugin_kernel.h"
#include "matrix/matrix_file.h"
#include "run/case_result_json.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

// The case each field is changed from: every size above one, so that any field can change alone
// and the case stays valid.
AttentionCase base_case() {
  AttentionCase base;
  base.batch = 2;
  base.heads = 4;
  base.kv_heads = 4;
  base.seq_len_q = 8;
  base.seq_len_k = 8;
  base.head_dim = 32;
  return base;
}

// Another valid value of every field's key, as a matrix file would write it. A row the schema
// gains must gain a value here too (FieldsHaveAnAlternativeValue fails until it does).
const std::map<std::string, Json>& alternative_values() {
  static const std::map<std::string, Json> values = {
      {"batch", 3},
      {"heads", 8},
      {"kv_heads", 2},
      {"seq_len_q", 5},
      {"seq_len_k", 9},
      {"head_dim", 64},
      {"dtype", "bf16"},
      {"causal", true},
      {"data", "uniform"},
      {"seed", std::uint64_t{7}},
      {"kernel", "other"},
      {"layout", "bhsd"},
      {"row_padding", 3},
      {"softmax_scale", 0.5},
      {"inject", "v:large:4"},
      {"seq_lens_q", "5,0"},
      {"seq_lens_k", "8,3"},
      {"page_size", 4},
      {"window_left", 2},
      {"window_right", 1},
      {"softcap", 20.0},
      {"alibi", true},
      {"return_lse", true},
  };
  return values;
}

std::vector<std::string> field_keys() {
  std::vector<std::string> keys;
  for_each_case_field([&](auto field) { keys.emplace_back(decltype(field)::key); });
  return keys;
}

// The base case with one field changed to its alternative value.
AttentionCase with_alternative(const std::string& key) {
  AttentionCase changed = base_case();
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    if (Field::key == key) {
      changed.*Field::member = Field::Codec::read(alternative_values().at(key));
    }
  });
  return changed;
}

CaseFieldUse use_of(const std::string& key) {
  CaseFieldUse use = CaseFieldUse::problem;
  for_each_case_field([&](auto field) {
    if (decltype(field)::key == key) use = decltype(field)::use;
  });
  return use;
}

CaseMatrix parse_one_case(const Json& keys) {
  const Json matrix = {{"name", "schema"}, {"cases", Json::array({keys})}};
  return parse_matrix_text(matrix.dump(), "schema.json",
                           [](const std::string& name) -> std::string {
                             throw HarnessError("no includes here: " + name);
                           });
}

// The problem's shape and numerics, strides left out.
std::vector<double> shape_fields(const AttentionProblem& p) {
  return {static_cast<double>(p.batch),
          static_cast<double>(p.heads),
          static_cast<double>(p.kv_heads),
          static_cast<double>(p.seq_len_q),
          static_cast<double>(p.seq_len_k),
          static_cast<double>(p.head_dim),
          static_cast<double>(p.dtype),
          static_cast<double>(p.causal),
          p.softmax_scale,
          static_cast<double>(p.window_left),
          static_cast<double>(p.window_right),
          p.softcap,
          static_cast<double>(p.alibi),
          static_cast<double>(p.return_lse),
          static_cast<double>(p.varlen_q),
          static_cast<double>(p.varlen_k),
          static_cast<double>(p.total_q),
          static_cast<double>(p.total_k),
          static_cast<double>(p.page_size)};
}

std::vector<std::int64_t> strides_of(const AttentionProblem& p) {
  std::vector<std::int64_t> strides;
  for (const TensorStrides& s : {p.q_strides, p.k_strides, p.v_strides, p.o_strides}) {
    strides.insert(strides.end(), {s.batch, s.seq, s.head});
  }
  return strides;
}

std::vector<double> abi_fields(const attnfuzz_problem_v2& abi_v2) {
  const attnfuzz_problem& abi = abi_v2.base;
  std::vector<double> fields = {static_cast<double>(abi.batch),
                                static_cast<double>(abi.heads),
                                static_cast<double>(abi.kv_heads),
                                static_cast<double>(abi.seq_len_q),
                                static_cast<double>(abi.seq_len_k),
                                static_cast<double>(abi.head_dim),
                                static_cast<double>(abi.dtype),
                                static_cast<double>(abi.causal),
                                abi.softmax_scale,
                                static_cast<double>(abi_v2.window_left),
                                static_cast<double>(abi_v2.window_right),
                                abi_v2.softcap,
                                static_cast<double>(abi_v2.alibi),
                                static_cast<double>(abi_v2.return_lse),
                                static_cast<double>(abi_v2.varlen_q),
                                static_cast<double>(abi_v2.varlen_k),
                                static_cast<double>(abi_v2.total_q),
                                static_cast<double>(abi_v2.total_k),
                                static_cast<double>(abi_v2.page_size)};
  for (const attnfuzz_strides& s : {abi.q_strides, abi.k_strides, abi.v_strides, abi.o_strides}) {
    fields.insert(fields.end(), {static_cast<double>(s.batch), static_cast<double>(s.seq),
                                 static_cast<double>(s.head)});
  }
  return fields;
}

AttentionInputs inputs_of(const AttentionCase& c) {
  return generate_inputs(problem_of(c), c.data, c.seed, c.injection);
}

bool same_inputs(const AttentionInputs& a, const AttentionInputs& b) {
  return a.q == b.q && a.k == b.k && a.v == b.v;
}

TEST(CaseSchema, FieldsHaveAnAlternativeValue) {
  for (const std::string& key : field_keys()) {
    EXPECT_TRUE(alternative_values().contains(key)) << "no alternative value for " << key;
  }
  EXPECT_EQ(alternative_values().size(), field_keys().size());
}

TEST(CaseSchema, KeysAreDistinct) {
  std::vector<std::string> keys = field_keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

class EachCaseField : public ::testing::TestWithParam<std::string> {};

TEST_P(EachCaseField, ChangesExactlyWhatItsUseSays) {
  const std::string& key = GetParam();
  const AttentionCase base = base_case();
  const AttentionCase changed = with_alternative(key);
  ASSERT_NE(changed, base) << "the alternative of " << key << " is its base value";

  const AttentionProblem base_problem = problem_of(base);
  const AttentionProblem changed_problem = problem_of(changed);
  const bool shape_changed = shape_fields(changed_problem) != shape_fields(base_problem);
  const bool strides_changed = strides_of(changed_problem) != strides_of(base_problem);
  const bool abi_changed =
      abi_fields(abi_problem_v2_of(changed_problem)) != abi_fields(abi_problem_v2_of(base_problem));
  switch (use_of(key)) {
    case CaseFieldUse::problem:
      EXPECT_TRUE(shape_changed) << key << " does not reach the problem (problem_of)";
      EXPECT_TRUE(abi_changed) << key << " does not reach the plugin ABI's problem";
      break;
    case CaseFieldUse::layout:
      EXPECT_FALSE(shape_changed) << key;
      EXPECT_TRUE(strides_changed) << key << " does not reach the strides (problem_of)";
      EXPECT_TRUE(abi_changed) << key << " does not reach the plugin ABI's strides";
      break;
    case CaseFieldUse::data:
      EXPECT_FALSE(shape_changed || strides_changed) << key;
      EXPECT_FALSE(same_inputs(inputs_of(changed), inputs_of(base)))
          << key << " does not reach the generated inputs";
      break;
    case CaseFieldUse::kernel:
      EXPECT_FALSE(shape_changed || strides_changed) << key;
      EXPECT_TRUE(same_inputs(inputs_of(changed), inputs_of(base))) << key;
      EXPECT_NE(changed.kernel, base.kernel);
      break;
  }
}

TEST_P(EachCaseField, ReadsBackFromTheCaseJson) {
  const AttentionCase changed = with_alternative(GetParam());
  const Json keys = case_keys_to_json(changed);
  EXPECT_EQ(keys.at(GetParam()), alternative_values().at(GetParam()));
  AttentionCase parsed = parse_one_case(keys).cases.at(0);
  parsed.id.clear();
  EXPECT_EQ(parsed, changed);
}

TEST_P(EachCaseField, ReadsBackFromTheBinaryForm) {
  // The binary form (case/case_codec.h) is laid out by hand, byte by byte: a field it forgot
  // would come back as its default.
  const AttentionCase changed = with_alternative(GetParam());
  std::string why;
  const auto bytes = encode_case(changed, &why);
  ASSERT_TRUE(bytes) << why;
  EXPECT_EQ(decode_case(*bytes), changed);
}

TEST_P(EachCaseField, ReadsBackFromAReportsConfig) {
  AttentionCase changed = with_alternative(GetParam());
  CaseResult result;
  result.attention_case = changed;
  const Json config = case_to_json(result).at("config");
  AttentionCase parsed = parse_one_case(config).cases.at(0);
  parsed.id.clear();
  // A report states the scale the case ran with, where the case may have left it to the default.
  changed.softmax_scale = effective_softmax_scale(changed);
  EXPECT_EQ(parsed, changed) << config.dump();
}

TEST_P(EachCaseField, ItsAlternativeValueIsWithinItsLimits) {
  // What read() accepts, outside_limits() must accept too (it checks cases that did not come
  // through read(): decoded, generated).
  const AttentionCase changed = with_alternative(GetParam());
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    if (Field::key != GetParam()) return;
    EXPECT_EQ(Field::Codec::outside_limits(changed.*Field::member), std::nullopt);
  });
}

INSTANTIATE_TEST_SUITE_P(Fields, EachCaseField, ::testing::ValuesIn(field_keys()),
                         [](const auto& info) { return info.param; });

TEST(CaseSchema, SizesOutsideTheirLimitsAreNamed) {
  EXPECT_EQ(PositiveInteger::outside_limits(0), "0 (not positive)");
  EXPECT_EQ(NonNegativeInteger::outside_limits(-1), "-1 (negative)");
  EXPECT_NE(OptionalScale::outside_limits(-1.0), std::nullopt);
  EXPECT_EQ(OptionalScale::outside_limits(0.0), std::nullopt);  // 0: the default scale
  EXPECT_NE(DtypeName::outside_limits(static_cast<Dtype>(7)), std::nullopt);
}

TEST(CaseSchema, AReportsConfigCarriesTheSeedCompatibleNames) {
  CaseResult result;
  result.attention_case = base_case();
  result.attention_case.seq_len_k = 11;
  const Json config = case_to_json(result).at("config");
  EXPECT_EQ(config.at("batch_size"), 2);
  EXPECT_EQ(config.at("num_heads"), 4);
  EXPECT_EQ(config.at("seq_len"), 8);
  EXPECT_EQ(config.at("seq_len_k"), 11);
  EXPECT_EQ(config.at("head_dim"), 32);
  EXPECT_EQ(config.at("dtype"), "fp16");
  EXPECT_EQ(config.at("inject"), "none");
}

TEST(CaseSchema, AnAliasAndItsKeyMustAgree) {
  EXPECT_EQ(parse_one_case({{"batch", 3}, {"batch_size", 3}}).cases.at(0).batch, 3);
  EXPECT_EQ(parse_one_case({{"num_heads", 6}, {"kv_heads", 2}}).cases.at(0).heads, 6);
  try {
    parse_one_case({{"batch", 3}, {"batch_size", 4}});
    FAIL() << "no error";
  } catch (const HarnessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("field /cases/0/batch_size"));
    EXPECT_THAT(error.what(), HasSubstr("disagrees with \"batch\""));
  }
}

RC_GTEST_PROP(CaseSchema, EveryCaseReadsBackFromItsJsonAndItsReportConfig, ()) {
  AttentionCase attention_case = *small_case();
  attention_case.id.clear();
  AttentionCase from_json = parse_one_case(case_keys_to_json(attention_case)).cases.at(0);
  from_json.id.clear();
  RC_ASSERT(from_json == attention_case);

  CaseResult result;
  result.attention_case = attention_case;
  AttentionCase from_config = parse_one_case(case_to_json(result).at("config")).cases.at(0);
  from_config.id.clear();
  attention_case.softmax_scale = effective_softmax_scale(attention_case);
  RC_ASSERT(from_config == attention_case);
}

}  // namespace
}  // namespace attnfuzz
