// SPDX-License-Identifier: BSD-3-Clause
#include "case/case_pattern.h"

#include <string_view>

#include "core/text.h"

namespace attnfuzz {
namespace {

using Condition = std::function<bool(const AttentionCase&)>;

template <CaseField field>
Condition field_equals(const nlohmann::json& value) {
  using Traits = CaseFieldTraits<field>;
  return [wanted = Traits::Codec::read(value)](const AttentionCase& attention_case) {
    return attention_case.*Traits::member == wanted;
  };
}

template <CaseField first, CaseField second>
Condition both_fields_equal(const nlohmann::json& value) {
  return [first_equals = field_equals<first>(value),
          second_equals = field_equals<second>(value)](const AttentionCase& attention_case) {
    return first_equals(attention_case) && second_equals(attention_case);
  };
}

struct PatternKey {
  std::string_view name;
  Condition (*condition)(const nlohmann::json& value);  // throws FieldProblem
};

// Every key a matrix file may give a case, from the schema's table.
constexpr PatternKey kPatternKeys[] = {
#define ATTNFUZZ_PATTERN_FIELD(member, Codec, key, value, use) \
  {key, &field_equals<CaseField::member>},
#define ATTNFUZZ_PATTERN_SHORTHAND(key, first, second) \
  {key, &both_fields_equal<CaseField::first, CaseField::second>},
#define ATTNFUZZ_PATTERN_ALIAS(alias, member) {alias, &field_equals<CaseField::member>},
    ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_PATTERN_FIELD, ATTNFUZZ_PATTERN_SHORTHAND, ATTNFUZZ_PATTERN_ALIAS)
#undef ATTNFUZZ_PATTERN_FIELD
#undef ATTNFUZZ_PATTERN_SHORTHAND
#undef ATTNFUZZ_PATTERN_ALIAS
};

std::vector<std::string> pattern_key_names() {
  std::vector<std::string> names;
  for (const PatternKey& key : kPatternKeys) names.emplace_back(key.name);
  return names;
}

}  // namespace

CasePattern CasePattern::from_json(const nlohmann::json& where) {
  if (!where.is_object()) {
    throw CasePatternProblem{"",
                             "expected an object of case keys, got " + describe_json_value(where)};
  }
  CasePattern pattern;
  for (const auto& [name, value] : where.items()) {
    const PatternKey* found = nullptr;
    for (const PatternKey& key : kPatternKeys) {
      if (key.name == name) found = &key;
    }
    if (found == nullptr) {
      throw CasePatternProblem{name, "unknown case key \"" + name +
                                         "\" (case keys: " + join_names(pattern_key_names()) + ")"};
    }
    try {
      pattern.conditions_.push_back(found->condition(value));
    } catch (const FieldProblem& problem) {
      throw CasePatternProblem{name, problem.message};
    }
  }
  return pattern;
}

bool CasePattern::matches(const AttentionCase& attention_case) const {
  AttentionCase as_run = attention_case;
  as_run.softmax_scale = effective_softmax_scale(attention_case);
  for (const Condition& condition : conditions_) {
    if (!condition(as_run)) return false;
  }
  return true;
}

}  // namespace attnfuzz
