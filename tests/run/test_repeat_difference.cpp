// SPDX-License-Identifier: BSD-3-Clause
// The determinism check's comparison: silent on identical outputs, and otherwise naming the first
// differing element in (batch, head, row, dim) order, both values and how many elements differ.
#include "run/repeat_difference.h"

#include <gtest/gtest.h>

#include <vector>

#include "case/attention_case.h"

namespace attnfuzz {
namespace {

struct TwoOutputs {
  AttentionProblem problem;
  std::vector<std::uint16_t> first;
  std::vector<std::uint16_t> repeat;

  TwoOutputs() {
    AttentionCase attention_case;
    attention_case.batch = 2;
    attention_case.heads = 3;
    attention_case.kv_heads = 1;
    attention_case.seq_len_q = attention_case.seq_len_k = 5;
    attention_case.head_dim = 32;
    attention_case.layout = Layout::bhsd;
    attention_case.row_padding = 4;
    problem = problem_of(attention_case);
    first.assign(static_cast<std::size_t>(problem.batch * problem.o_strides.batch),
                 float_to_fp16(0.25f));
    repeat = first;
  }
  std::uint16_t& at(std::vector<std::uint16_t>& output, std::int64_t b, std::int64_t h,
                    std::int64_t i, std::int64_t d) {
    return output[b * problem.o_strides.batch + h * problem.o_strides.head +
                  i * problem.o_strides.seq + d];
  }
  std::optional<std::string> difference() {
    return find_repeat_difference(problem, first.data(), repeat.data(), 2);
  }
};

TEST(RepeatDifference, IdenticalOutputsAreNoDifference) {
  TwoOutputs outputs;
  EXPECT_EQ(outputs.difference(), std::nullopt);
}

TEST(RepeatDifference, RowPaddingIsNotPartOfTheOutput) {
  TwoOutputs outputs;
  outputs.repeat[outputs.problem.head_dim] ^= 1u;  // the first row's padding, never compared
  EXPECT_EQ(outputs.difference(), std::nullopt);
}

TEST(RepeatDifference, OneUlpInOneElementIsNamedWithBothValuesAndTheCount) {
  TwoOutputs outputs;
  outputs.at(outputs.repeat, 1, 2, 4, 31) ^= 1u;
  outputs.at(outputs.repeat, 1, 0, 3, 7) ^= 1u;
  const std::optional<std::string> difference = outputs.difference();
  ASSERT_TRUE(difference);
  EXPECT_NE(difference->find("nondeterministic: element (b=1, h=0, i=3, d=7) is 0.25 in run 1 "
                             "and 0.250244141 in run 2"),
            std::string::npos)
      << *difference;
  EXPECT_NE(difference->find("2 of 960 elements differ"), std::string::npos) << *difference;
}

TEST(RepeatDifference, PositiveAndNegativeZeroDiffer) {
  TwoOutputs outputs;
  outputs.at(outputs.first, 0, 0, 0, 0) = 0x0000;
  outputs.at(outputs.repeat, 0, 0, 0, 0) = 0x8000;
  EXPECT_TRUE(outputs.difference());
}

}  // namespace
}  // namespace attnfuzz
