// SPDX-License-Identifier: BSD-3-Clause
#include "core/text.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace attnfuzz {
namespace {

template <typename Name>
std::string join(std::span<const Name> names, std::string_view separator) {
  std::string text;
  for (const Name& name : names) {
    if (!text.empty()) text += separator;
    text += name;
  }
  return text;
}

bool is_control_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

bool is_kept(char c, KeptControls kept) {
  switch (kept) {
    case KeptControls::tab_and_newline:
      return c == '\t' || c == '\n';
    case KeptControls::tab_newline_and_return:
      return c == '\t' || c == '\n' || c == '\r';
  }
  return false;
}

// The length of the well-formed UTF-8 sequence starting at text[at], or 0 if there is none there
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t index) { return static_cast<unsigned char>(text[index]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong
    if (lead == 0xED) second_max = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong
    if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < second_min || byte(at + 1) > second_max) return 0;
  for (std::size_t index = at + 2; index < at + length; ++index) {
    if (byte(index) < 0x80 || byte(index) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string join_names(std::span<const std::string_view> names, std::string_view separator) {
  return join(names, separator);
}

std::string join_names(std::span<const std::string> names, std::string_view separator) {
  return join(names, separator);
}

namespace {

// The edit distance between two names (insertions, deletions, substitutions, transpositions of
// neighbours).
std::size_t edit_distance(std::string_view from, std::string_view to) {
  std::vector<std::vector<std::size_t>> cost(from.size() + 1,
                                             std::vector<std::size_t>(to.size() + 1));
  for (std::size_t i = 0; i <= from.size(); ++i) cost[i][0] = i;
  for (std::size_t j = 0; j <= to.size(); ++j) cost[0][j] = j;
  for (std::size_t i = 1; i <= from.size(); ++i) {
    for (std::size_t j = 1; j <= to.size(); ++j) {
      cost[i][j] = std::min({cost[i - 1][j] + 1, cost[i][j - 1] + 1,
                             cost[i - 1][j - 1] + (from[i - 1] == to[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && from[i - 1] == to[j - 2] && from[i - 2] == to[j - 1]) {
        cost[i][j] = std::min(cost[i][j], cost[i - 2][j - 2] + 1);
      }
    }
  }
  return cost[from.size()][to.size()];
}

}  // namespace

std::optional<std::string> closest_name(std::string_view typed,
                                        std::span<const std::string> candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = typed.size() / 3 + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(typed, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string escape_control_characters(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (const char c : text) {
    if (!is_control_character(c)) {
      line += c;
    } else if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      line += escaped;
    }
  }
  return line;
}

std::string printable_text(std::string_view text, KeptControls kept) {
  std::string printable;
  printable.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t length = utf8_sequence_length(text, at);
      if (length == 0) {
        printable += "\uFFFD";
        ++at;
      } else {
        printable.append(text.substr(at, length));
        at += length;
      }
      continue;
    }
    printable += is_control_character(c) && !is_kept(c, kept) ? '?' : c;
    ++at;
  }
  return printable;
}

}  // namespace attnfuzz
