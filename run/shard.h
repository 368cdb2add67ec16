// SPDX-License-Identifier: BSD-3-Clause
// Splitting a matrix between CI jobs (or GPUs): `--shard I/N` runs the I-th of N deterministic,
// disjoint parts whose union is the whole matrix. Cases are dealt round-robin by their position,
// so every shard gets a like share of the small edge cases and of the large ones.
#pragma once

#include <string_view>
#include <vector>

#include "case/attention_case.h"

namespace attnfuzz {

struct Shard {
  int index = 1;  // 1-based, as written on the command line
  int count = 1;
};

// Parses "I/N" with 1 <= I <= N; throws HarnessError naming the problem otherwise.
Shard parse_shard(std::string_view text);

// The cases of `shard`: every case whose position p (0-based) has p % count == index - 1.
std::vector<AttentionCase> cases_of_shard(const std::vector<AttentionCase>& cases, Shard shard);

}  // namespace attnfuzz
