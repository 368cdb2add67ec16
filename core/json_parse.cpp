// SPDX-License-Identifier: BSD-3-Clause
#include "core/json_parse.h"

#include <string>

namespace attnfuzz {

JsonTooDeep::JsonTooDeep()
    : std::runtime_error("arrays and objects nested more than " + std::to_string(kMaxJsonDepth) +
                         " levels deep") {}

nlohmann::json parse_json(std::string_view text) {
  // The callback sees every value as it starts, with its depth; throwing ends the parse.
  const nlohmann::json::parser_callback_t limit_depth = [](int depth, nlohmann::json::parse_event_t,
                                                           nlohmann::json&) {
    if (depth > kMaxJsonDepth) throw JsonTooDeep();
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), limit_depth);
}

nlohmann::json parse_json_or_discarded(std::string_view text) {
  try {
    return parse_json(text);
  } catch (const std::exception&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace attnfuzz
