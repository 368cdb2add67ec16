// SPDX-License-Identifier: BSD-3-Clause
// JSON read from files, pipes and worker processes the harness does not control. nlohmann's
// parser is iterative, but copying, comparing and printing a value recurse once per level: a value
// nested 100,000 levels deep (a 200 KB file) would overflow the stack later, far from the file
// that held it. Every value read from outside is therefore refused past kMaxJsonDepth levels, at
// the parse, where the message can still name the file.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

namespace attnfuzz {

// Far deeper than any matrix, report or stream record (they nest 5 levels or fewer).
inline constexpr int kMaxJsonDepth = 64;

struct JsonTooDeep : std::runtime_error {
  JsonTooDeep();
};

// `text` parsed as nlohmann::json::parse does (throwing its parse_error or out_of_range), or
// JsonTooDeep when arrays and objects nest more than kMaxJsonDepth levels.
nlohmann::json parse_json(std::string_view text);

// The same without exceptions: a discarded value (is_discarded()) on any problem.
nlohmann::json parse_json_or_discarded(std::string_view text);

}  // namespace attnfuzz
