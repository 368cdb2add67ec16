// SPDX-License-Identifier: BSD-3-Clause
// The case generators (fuzz/case_generator.h): the cases the property search and the false-alarm
// bench draw reach every field of the case schema, and every case they draw is valid.
#include "fuzz/case_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/case_alternatives.h"

namespace attnfuzz {
namespace {

constexpr int kDraws = 3000;

AttentionCase drawn(const rc::Gen<AttentionCase>& generator, int index) {
  return generator(rc::Random(20261126u + static_cast<std::uint64_t>(index)), 100).value();
}

TEST(CaseGenerator, TheSearchTakesEveryFieldOfTheSchemaAwayFromItsDefault) {
  // A field the search never changes is an axis it cannot reach: a row added to the case schema
  // must be drawn here too. The kernel is the one exception: the search runs the kernel it is
  // given (--kernel, the backend's default or a plugin's), never one a case names.
  const AttentionCase defaults;
  std::map<std::string, int> changed;
  const rc::Gen<AttentionCase> generator = search_cases();
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(generator, index);
    for_each_case_field([&](auto field) {
      using Field = decltype(field);
      if (!(attention_case.*Field::member == defaults.*Field::member)) {
        ++changed[std::string(Field::key)];
      }
    });
  }
  for (const std::string& key : field_keys()) {
    if (key == "kernel") {
      EXPECT_EQ(changed[key], 0);
      continue;
    }
    EXPECT_GT(changed[key], 0) << "the search never draws a case whose " << key
                               << " is not its default";
  }
}

TEST(CaseGenerator, EveryCaseTheSearchDrawsIsValid) {
  const rc::Gen<AttentionCase> generator = search_cases();
  for (int index = 0; index < kDraws; ++index) {
    const AttentionCase attention_case = drawn(generator, index);
    const std::optional<CaseInconsistency> inconsistency = find_inconsistency(attention_case);
    EXPECT_FALSE(inconsistency.has_value())
        << inconsistency->message << ": " << describe_case(attention_case);
    for_each_case_field([&](auto field) {
      using Field = decltype(field);
      EXPECT_EQ(Field::Codec::outside_limits(attention_case.*Field::member), std::nullopt)
          << Field::key << " of " << describe_case(attention_case);
    });
  }
}

}  // namespace
}  // namespace attnfuzz
