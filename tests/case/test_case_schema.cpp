// SPDX-License-Identifier: BSD-3-Clause
// The case schema (case/case_schema.h) against every form of a case: each row of the table
// reaches the matrix reader, the JSON writer, a report's config, the validity check and the
// problem (or the layout, the data, the kernel) that it claims to change.
#include "case/case_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/case_codec.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/problem_features.h"
#include "fuzz/case_generator.h"
#include "kernels/plugin_kernel.h"
#include "matrix/matrix_file.h"
#include "run/case_result_json.h"
#include "support/case_alternatives.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

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
          static_cast<double>(p.page_size),
          static_cast<double>(p.q_storage),
          static_cast<double>(p.k_storage),
          static_cast<double>(p.v_storage),
          static_cast<double>(p.descale)};
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
    case CaseFieldUse::passes:
      // The forward's problem, data and kernel stay; what changes is which passes run.
      EXPECT_FALSE(shape_changed || strides_changed || abi_changed) << key;
      EXPECT_TRUE(same_inputs(inputs_of(changed), inputs_of(base))) << key;
      EXPECT_NE(changed.backward, base.backward);
      break;
    case CaseFieldUse::storage:
      // The problem says how its inputs are stored: version 4's problem carries it, version 2's
      // does not, so it is a feature only a version 4 plugin declares (kernels/plugin_kernel.cpp).
      EXPECT_TRUE(shape_changed) << key << " does not reach the problem (problem_of)";
      EXPECT_FALSE(strides_changed || abi_changed) << key;
      {
        const attnfuzz_problem_v4 before = abi_problem_v4_of(problem_of(base));
        const attnfuzz_problem_v4 after = abi_problem_v4_of(changed_problem);
        EXPECT_TRUE(before.q_dtype != after.q_dtype || before.k_dtype != after.k_dtype ||
                    before.v_dtype != after.v_dtype || before.descale != after.descale)
            << key << " does not reach plugin ABI version 4's problem";
      }
      EXPECT_NE(
          features_of(changed_problem) & static_cast<std::uint32_t>(ProblemFeature::fp8_inputs), 0u)
          << key;
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

// The fields of a dense problem. Every other field of the problem is an attention variant: a
// feature a kernel declares it supports (core/problem_features.h), which the binary form's version
// 2 carries and the cuBLAS oracle and the metamorphic properties leave alone. A problem field added
// to the schema is one or the other: this list or a row of ATTNFUZZ_PROBLEM_FEATURES.
const std::set<std::string> kDenseProblemKeys = {"batch",     "heads",     "kv_heads",
                                                 "seq_len_q", "seq_len_k", "head_dim",
                                                 "dtype",     "causal",    "softmax_scale"};

TEST_P(EachCaseField, IsPartOfTheDenseProblemOrAFeatureAKernelDeclares) {
  if (use_of(GetParam()) != CaseFieldUse::problem) return;
  const std::uint32_t features = features_of(problem_shape_of(with_alternative(GetParam())));
  EXPECT_EQ(features != 0, !kDenseProblemKeys.contains(GetParam()))
      << GetParam()
      << (features != 0 ? " is a feature but listed as dense"
                        : " is neither dense nor a feature of ATTNFUZZ_PROBLEM_FEATURES");
}

TEST_P(EachCaseField, NeedsTheBinaryFormsSecondVersionExactlyWhenItIsAVariant) {
  // Version 1's bytes hold the dense problem, the layout, the data and the kernel; a variant (or
  // the backward pass, a bit of the variants' flags) needs version 2, and a dense forward case
  // keeps version 1 (the bytes that saved corpora hold).
  const std::string& key = GetParam();
  const auto bytes = encode_case(with_alternative(key));
  ASSERT_TRUE(bytes);
  const bool variant = (use_of(key) == CaseFieldUse::problem && !kDenseProblemKeys.contains(key)) ||
                       use_of(key) == CaseFieldUse::passes || use_of(key) == CaseFieldUse::storage;
  EXPECT_EQ((*bytes)[3], variant ? kCaseEncodingVersionWithVariants : kCaseEncodingVersion) << key;
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

TEST(CaseSchema, AReportsConfigCarriesEveryAliasAndShorthandWithItsFieldsValue) {
  // Each ALIAS and SHORTHAND key of the table is in a report's config, and the matrix reader,
  // given that key alone, reads the case's value of the field it names (a shorthand's first).
  CaseResult result;
  result.attention_case = base_case();
  result.attention_case.seq_len_k = 11;
  const Json config = case_to_json(result).at("config");
  const auto reads_back = [&](const char* key, auto member) {
    ASSERT_TRUE(config.contains(key)) << key;
    const AttentionCase alone = parse_one_case({{key, config.at(key)}}).cases.at(0);
    EXPECT_EQ(alone.*member, result.attention_case.*member) << key;
  };
#define ATTNFUZZ_READS_BACK_ALIAS(key, member) reads_back(key, &AttentionCase::member);
#define ATTNFUZZ_READS_BACK_SHORTHAND(key, first, second) ATTNFUZZ_READS_BACK_ALIAS(key, first)
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_READS_BACK_SHORTHAND,
                       ATTNFUZZ_READS_BACK_ALIAS)
#undef ATTNFUZZ_READS_BACK_SHORTHAND
#undef ATTNFUZZ_READS_BACK_ALIAS
}

nlohmann::ordered_json schema_file(const std::string& name) {
  return nlohmann::ordered_json::parse(
      read_file(std::string(ATTNFUZZ_SOURCE_DIR) + "/docs/schema/" + name));
}

std::vector<std::string> property_names(const nlohmann::ordered_json& object) {
  std::vector<std::string> names;
  for (const auto& item : object.at("properties").items()) names.push_back(item.key());
  return names;
}

TEST(CaseSchema, TheMatrixFileSchemaNamesEveryKeyWhereverItListsKeys) {
  // docs/schema/matrix.schema.json is written by hand: each key is a property of "defaults" and of
  // a case entry (in the order keys apply), and has its own definition and its axis's.
  const nlohmann::ordered_json schema = schema_file("matrix.schema.json");
  const std::vector<std::string> keys = case_keys();
  EXPECT_EQ(property_names(schema.at("properties").at("defaults")), keys);
  EXPECT_EQ(property_names(schema.at("$defs").at("case_entry")), keys);
  for (const std::string& key : keys) {
    EXPECT_TRUE(schema.at("$defs").contains(key)) << "no $defs/" << key;
    EXPECT_TRUE(schema.at("$defs").contains("axis_of_" + key)) << "no $defs/axis_of_" << key;
  }
}

TEST(CaseSchema, TheReportSchemaNamesEveryKeyOfAConfigAndRequiresThoseAlwaysWritten) {
  // docs/schema/report.schema.json's config: every key a config may carry is a property; those
  // that a config of any case carries (a default case's: nothing left out as unset) are required.
  const nlohmann::ordered_json config = schema_file("report.schema.json").at("$defs").at("config");
  const std::vector<std::string> keys = case_keys();
  EXPECT_EQ(property_names(config), keys);
  CaseResult result;
  const Json written = case_to_json(result).at("config");
  std::set<std::string> always_written;
  for (const auto& item : written.items()) always_written.insert(item.key());
  const std::vector<std::string> required = config.at("required").get<std::vector<std::string>>();
  EXPECT_EQ(std::set<std::string>(required.begin(), required.end()), always_written);
}

TEST(CaseSchema, TheDocsNameEveryKeyOfAMatrixAndOfAReportsConfig) {
  const std::string docs = std::string(ATTNFUZZ_SOURCE_DIR) + "/docs/";
  const std::string matrix_page = read_file(docs + "matrix.md");
  const std::string report_page = read_file(docs + "report.md");
  const std::size_t config_start = report_page.find("**config**");
  ASSERT_NE(config_start, std::string::npos) << "docs/report.md has no **config** paragraph";
  const std::string config_paragraph =
      report_page.substr(config_start, report_page.find("\n\n", config_start) - config_start);
  for (const std::string& key : case_keys()) {
    EXPECT_NE(matrix_page.find("`" + key + "`"), std::string::npos) << key << " in docs/matrix.md";
    EXPECT_NE(config_paragraph.find("`" + key + "`"), std::string::npos)
        << key << " in docs/report.md's config paragraph";
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
