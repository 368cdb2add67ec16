// SPDX-License-Identifier: BSD-3-Clause
#include "run/shard.h"

#include <charconv>
#include <string>

#include "core/harness_error.h"

namespace attnfuzz {
namespace {

int parse_positive(std::string_view digits, std::string_view whole) {
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || value < 1) {
    throw HarnessError("--shard: '" + std::string(whole) +
                       "' is not I/N with whole numbers 1 <= I <= N");
  }
  return value;
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    throw HarnessError("--shard: '" + std::string(text) + "' is not I/N, e.g. --shard 2/4");
  }
  Shard shard;
  shard.index = parse_positive(text.substr(0, slash), text);
  shard.count = parse_positive(text.substr(slash + 1), text);
  if (shard.index > shard.count) {
    throw HarnessError("--shard: shard " + std::to_string(shard.index) + " of " +
                       std::to_string(shard.count) + " does not exist (1 <= I <= N)");
  }
  return shard;
}

std::vector<AttentionCase> cases_of_shard(const std::vector<AttentionCase>& cases, Shard shard) {
  std::vector<AttentionCase> selected;
  for (std::size_t position = 0; position < cases.size(); ++position) {
    if (static_cast<int>(position % static_cast<std::size_t>(shard.count)) == shard.index - 1) {
      selected.push_back(cases[position]);
    }
  }
  return selected;
}

}  // namespace attnfuzz
