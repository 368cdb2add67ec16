// SPDX-License-Identifier: BSD-3-Clause
// Text helpers the whole harness shares: names joined for messages, control characters made
// visible so that text from files, plugins and workers stays on one line, and foreign text
// (kernel messages, worker output) made printable before any renderer adds its own escaping.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnfuzz {

// "a, b, c" (or with another separator).
std::string join_names(std::span<const std::string_view> names, std::string_view separator = ", ");
std::string join_names(std::span<const std::string> names, std::string_view separator = ", ");

// The candidate nearest `typed` in edits (insertions, deletions, substitutions, transpositions of
// neighbours), when it lies within a third of `typed`'s length: what a "did you mean" names.
// Nothing when none is that close.
std::optional<std::string> closest_name(std::string_view typed,
                                        std::span<const std::string> candidates);

// `text` with every control character (below 0x20, and 0x7f) escaped as JSON writes it: \n, \r,
// \t, otherwise \u00XX. Other bytes, UTF-8 included, are kept. A message holding text from a
// file stays one printable line.
std::string escape_control_characters(std::string_view text);

// Which control characters (below 0x20, and 0x7f) printable_text keeps; it replaces the others.
enum class KeptControls {
  tab_and_newline,         // terminals and logs: '\t', '\n' (a '\r' could overwrite a line)
  tab_newline_and_return,  // XML and HTML: '\t', '\n', '\r', the only ones XML 1.0 allows
};

// `text` made printable, the one policy for text the harness did not write: valid UTF-8, each
// byte that starts no well-formed sequence (a stray continuation byte, an overlong form, a
// surrogate, past U+10FFFF, cut short) replaced by U+FFFD, and each control character but the
// `kept` ones replaced by '?'. Every other byte, UTF-8 included, is kept. Renderers add their own
// format's escaping on top (HTML entities, Markdown table cells); JSON goes through json_text.
std::string printable_text(std::string_view text, KeptControls kept);

}  // namespace attnfuzz
