// SPDX-License-Identifier: BSD-3-Clause
// What messages about JSON files say beyond nlohmann's parser: where a value is, where parsing
// stops, which key is written twice.
#include "core/json_diagnostics.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json_parse.h"

namespace attnfuzz {
namespace {

TEST(JsonDiagnostics, APointerEscapesTildeAndSlashInKeys) {
  EXPECT_EQ(child_pointer("", "cases"), "/cases");
  EXPECT_EQ(child_pointer(child_pointer("", "cases"), std::size_t{3}), "/cases/3");
  EXPECT_EQ(child_pointer("/defaults", "a/b~c"), "/defaults/a~1b~0c");
}

TEST(JsonDiagnostics, TheFirstKeyWrittenTwiceIsNamedByItsPointer) {
  EXPECT_EQ(first_duplicate_key(R"({"a": 1, "b": 2})"), std::nullopt);
  EXPECT_EQ(first_duplicate_key(R"({"cases": [{"batch": 1}, {"batch": 2, "batch": 3}]})"),
            "/cases/1/batch");
  EXPECT_EQ(first_duplicate_key(R"({"x": {"y": [0, {"z/": 1, "z/": 2}]}})"), "/x/y/1/z~1");
  // The same key in two objects is no duplicate.
  EXPECT_EQ(first_duplicate_key(R"([{"batch": 1}, {"batch": 1}])"), std::nullopt);
}

TEST(JsonDiagnostics, ParsingStopsWhereTheParserSaysEvenForANumberOutOfRange) {
  const std::string text = R"({"batch": 1e999})";
  try {
    (void)parse_json(text);
    FAIL() << "parsed";
  } catch (const nlohmann::json::out_of_range& error) {
    EXPECT_EQ(json_problem(error).find("[json.exception"), std::string::npos);
  }
  EXPECT_EQ(byte_where_parsing_stops(text), 15u);  // just past the number
  EXPECT_EQ(byte_where_parsing_stops(R"({"batch": })"), 11u);
}

}  // namespace
}  // namespace attnfuzz
