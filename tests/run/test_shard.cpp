// SPDX-License-Identifier: BSD-3-Clause
// --shard I/N: the shards of a matrix are disjoint, together are the whole matrix, differ in size
// by at most one case, and a malformed spec is refused with the spec named.
#include "run/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

#include "core/harness_error.h"

namespace attnfuzz {
namespace {

std::vector<AttentionCase> numbered_cases(int count) {
  std::vector<AttentionCase> cases(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) cases[static_cast<std::size_t>(i)].id = "m/" + std::to_string(i);
  return cases;
}

RC_GTEST_PROP(Shard, ShardsAreDisjointCoverTheMatrixAndDifferInSizeByAtMostOne, ()) {
  const int case_count = *rc::gen::inRange(0, 300);
  const int shard_count = *rc::gen::inRange(1, 40);
  const std::vector<AttentionCase> cases = numbered_cases(case_count);
  std::multiset<std::string> seen;
  std::size_t smallest = cases.size(), largest = 0;
  for (int index = 1; index <= shard_count; ++index) {
    const std::vector<AttentionCase> shard = cases_of_shard(cases, {index, shard_count});
    for (const AttentionCase& attention_case : shard) seen.insert(attention_case.id);
    smallest = std::min(smallest, shard.size());
    largest = std::max(largest, shard.size());
  }
  RC_ASSERT(seen.size() == cases.size());
  for (const AttentionCase& attention_case : cases) RC_ASSERT(seen.count(attention_case.id) == 1u);
  RC_ASSERT(largest - smallest <= 1u);
}

TEST(Shard, ParsesIOverN) {
  const Shard shard = parse_shard("2/5");
  EXPECT_EQ(shard.index, 2);
  EXPECT_EQ(shard.count, 5);
}

TEST(Shard, RefusesMalformedSpecsNamingThem) {
  for (const char* spec : {"", "3", "0/4", "5/4", "a/4", "1/b", "1/0", "-1/4", "1/4x", "1//4"}) {
    try {
      parse_shard(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const HarnessError& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("--shard")) << spec;
    }
  }
}

}  // namespace
}  // namespace attnfuzz
