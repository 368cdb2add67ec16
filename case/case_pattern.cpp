// SPDX-License-Identifier: BSD-3-Clause
#include "case/case_pattern.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

#include "core/text.h"

namespace attnfuzz {
namespace {

using Condition = std::function<bool(const AttentionCase&)>;

// The condition each field must meet, by field: a key sets its field's (a shorthand both of its
// fields'), later keys of the table's order over earlier ones, as the matrix reader applies them
// (seq_len, then seq_len_k: a longer key length).
using FieldConditions = std::array<Condition, kCaseFieldCount>;

template <CaseField field>
void set_field(FieldConditions& conditions, const nlohmann::json& value) {
  using Traits = CaseFieldTraits<field>;
  conditions[static_cast<std::size_t>(field)] =
      [wanted = Traits::Codec::read(value)](const AttentionCase& attention_case) {
        return attention_case.*Traits::member == wanted;
      };
}

template <CaseField first, CaseField second>
void set_both_fields(FieldConditions& conditions, const nlohmann::json& value) {
  set_field<first>(conditions, value);
  set_field<second>(conditions, value);
}

struct PatternKey {
  std::string_view name;
  void (*set)(FieldConditions& conditions, const nlohmann::json& value);  // throws FieldProblem
};

// Every key a matrix file may give a case, from the schema's table, in its order.
constexpr PatternKey kPatternKeys[] = {
#define ATTNFUZZ_PATTERN_FIELD(member, Codec, key, value, use) {key, &set_field<CaseField::member>},
#define ATTNFUZZ_PATTERN_SHORTHAND(key, first, second) \
  {key, &set_both_fields<CaseField::first, CaseField::second>},
#define ATTNFUZZ_PATTERN_ALIAS(alias, member) {alias, &set_field<CaseField::member>},
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
  for (const auto& item : where.items()) {
    const std::string& name = item.key();
    const bool known = std::any_of(std::begin(kPatternKeys), std::end(kPatternKeys),
                                   [&](const PatternKey& key) { return key.name == name; });
    if (!known) {
      throw CasePatternProblem{name, "unknown case key \"" + name +
                                         "\" (case keys: " + join_names(pattern_key_names()) + ")"};
    }
  }
  FieldConditions conditions;
  for (const PatternKey& key : kPatternKeys) {
    const auto value = where.find(key.name);
    if (value == where.end()) continue;
    try {
      key.set(conditions, *value);
    } catch (const FieldProblem& problem) {
      throw CasePatternProblem{std::string(key.name), problem.message};
    }
  }
  CasePattern pattern;
  for (Condition& condition : conditions) {
    if (condition) pattern.conditions_.push_back(std::move(condition));
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
