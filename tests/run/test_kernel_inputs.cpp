// SPDX-License-Identifier: BSD-3-Clause
// What a kernel is handed: copies of its inputs and index arrays, bound where the ABI puts them;
// an untouched copy is no change, and any change (in a tensor, its guard tail or an index array)
// is named with its first changed element, before and after.
#include "run/kernel_inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "case/attention_case.h"
#include "case/data_distribution.h"

namespace attnfuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A packed, paged, ALiBi case: every index array is in use.
AttentionCase case_with_every_index_array() {
  AttentionCase attention_case;
  attention_case.batch = 2;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 9;
  attention_case.seq_len_k = 20;
  attention_case.head_dim = 32;
  attention_case.seq_lens_q = {9, 4};
  attention_case.seq_lens_k = {20, 7};
  attention_case.page_size = 8;
  attention_case.alibi = true;
  return attention_case;
}

class KernelInputsTest : public ::testing::Test {
 protected:
  const AttentionProblem problem = problem_of(case_with_every_index_array());
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 3, {});
  KernelInputs handed = KernelInputs::copy_of(problem, inputs);
};

TEST_F(KernelInputsTest, CopiesAreBoundWhereTheAbiPutsThemAndAreNotTheOriginals) {
  std::uint16_t output = 0;
  float lse = 0;
  const AttentionTensors tensors = handed.bind(&output, &lse);
  EXPECT_EQ(tensors.q, handed.q.data());
  EXPECT_NE(tensors.q, inputs.q.data());
  EXPECT_EQ(tensors.k, handed.k.data());
  EXPECT_EQ(tensors.v, handed.v.data());
  EXPECT_EQ(tensors.o, &output);
  EXPECT_EQ(tensors.lse, &lse);
  EXPECT_EQ(tensors.cu_seqlens_q, handed.cu_seqlens_q.data());
  EXPECT_NE(tensors.cu_seqlens_q, problem.cu_seqlens_q.data());
  EXPECT_EQ(tensors.cu_seqlens_k, handed.cu_seqlens_k.data());
  EXPECT_EQ(tensors.block_table, handed.block_table.data());
  EXPECT_EQ(tensors.alibi_slopes, handed.alibi_slopes.data());
}

TEST_F(KernelInputsTest, ADenseProblemHasNoIndexArraysToBind) {
  const AttentionProblem dense = problem_of(AttentionCase{});
  const KernelInputs copies =
      KernelInputs::copy_of(dense, generate_inputs(dense, DataDistribution::normal, 1, {}));
  const AttentionTensors tensors = copies.bind(nullptr, nullptr);
  EXPECT_EQ(tensors.cu_seqlens_q, nullptr);
  EXPECT_EQ(tensors.cu_seqlens_k, nullptr);
  EXPECT_EQ(tensors.block_table, nullptr);
  EXPECT_EQ(tensors.alibi_slopes, nullptr);
}

TEST_F(KernelInputsTest, UntouchedCopiesAreNoChange) {
  EXPECT_EQ(find_changed_input(problem, inputs, handed), std::nullopt);
}

TEST_F(KernelInputsTest, AChangedTensorElementIsNamedWithItsValuesBeforeAndAfter) {
  handed.v[37] = 0x3c00;  // 1.0 in fp16
  handed.v[90] = 0x3c00;
  const std::optional<std::string> change = find_changed_input(problem, inputs, handed);
  ASSERT_TRUE(change);
  EXPECT_THAT(*change, HasSubstr("changed its input V"));
  EXPECT_THAT(*change, HasSubstr("element 37 was 0x"));
  EXPECT_THAT(*change, HasSubstr("is 0x3c00 (1)"));
  EXPECT_THAT(*change, Not(HasSubstr("guard tail")));
}

TEST_F(KernelInputsTest, AWriteIntoAGuardTailIsNamedAsSuch) {
  const std::size_t past_end = static_cast<std::size_t>(k_span(problem)) + 64;
  ASSERT_LT(past_end, handed.k.size());
  handed.k[past_end] = 0;
  const std::optional<std::string> change = find_changed_input(problem, inputs, handed);
  ASSERT_TRUE(change);
  EXPECT_THAT(*change, HasSubstr("changed its input K"));
  EXPECT_THAT(*change, HasSubstr("in its guard tail"));
}

TEST_F(KernelInputsTest, TheFirstTensorInQKVOrderIsNamedFirst) {
  handed.v[0] ^= 1;
  handed.q[5] ^= 1;
  EXPECT_THAT(find_changed_input(problem, inputs, handed).value_or(""),
              HasSubstr("changed its input Q"));
}

TEST_F(KernelInputsTest, EachChangedIndexArrayIsNamed) {
  const auto change_after = [&](auto edit) {
    KernelInputs copies = KernelInputs::copy_of(problem, inputs);
    edit(copies);
    return find_changed_input(problem, inputs, copies).value_or("");
  };
  EXPECT_THAT(change_after([](KernelInputs& copies) { copies.cu_seqlens_q[1] = 0; }),
              HasSubstr("cu_seqlens_q (inputs must be left as they were): [1] was 9, is 0"));
  EXPECT_THAT(change_after([](KernelInputs& copies) { copies.cu_seqlens_k[2] = 0; }),
              HasSubstr("cu_seqlens_k"));
  EXPECT_THAT(change_after([](KernelInputs& copies) { copies.block_table[0] += 1; }),
              HasSubstr("block_table"));
  EXPECT_THAT(change_after([](KernelInputs& copies) { copies.alibi_slopes[1] = 0.0f; }),
              HasSubstr("alibi_slopes (inputs must be left as they were): [1] was 0.0625, is 0"));
}

}  // namespace
}  // namespace attnfuzz
