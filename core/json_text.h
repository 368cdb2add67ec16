// SPDX-License-Identifier: BSD-3-Clause
// JSON as the harness writes it. Strings from kernels, plugins and files need not be UTF-8, and
// nlohmann's dump() throws on such bytes: everything the harness writes as JSON goes through
// json_text, which writes each invalid sequence as U+FFFD instead (nlohmann's own replacement, one
// U+FFFD for each maximal invalid subsequence) and escapes control characters as JSON does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnfuzz {

// `value` as JSON text, on one line (indent -1) or indented by `indent` spaces. Never throws on
// text that is not UTF-8.
inline std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `text` as a JSON string literal: quoted, control characters escaped, invalid UTF-8 replaced.
inline std::string json_quoted(std::string_view text) {
  return json_text(nlohmann::json(std::string(text)));
}

}  // namespace attnfuzz
