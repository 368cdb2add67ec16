// SPDX-License-Identifier: BSD-3-Clause
// What a message about a JSON file needs that nlohmann's parser does not say: where a value is
// (RFC 6901 JSON pointers), the byte where parsing stops for every kind of error, a key written
// twice in one object (which nlohmann accepts, keeping one of the values) and the parser's own
// words without its exception prefix.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace attnfuzz {

// The pointer to member `key` (escaped: "~" as "~0", "/" as "~1") or element `index` of the
// value at `parent` ("" is the whole document).
std::string child_pointer(const std::string& parent, std::string_view key);
std::string child_pointer(const std::string& parent, std::size_t index);

// The byte at which nlohmann's parser gives up on `text`. An out_of_range error (a number beyond
// double's range) carries no position, so this pass over the text, events only, finds it.
std::size_t byte_where_parsing_stops(std::string_view text);

// The JSON pointer of the first key written twice in one object, if any: nlohmann keeps one of
// the two values without a word, and a file whose case gives "batch" twice is ambiguous.
std::optional<std::string> first_duplicate_key(std::string_view text);

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_problem(const nlohmann::json::exception& error);

}  // namespace attnfuzz
