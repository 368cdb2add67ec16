// SPDX-License-Identifier: BSD-3-Clause
// The pairs' addressing the device's references widen their inputs by: every element of a chunk
// comes from the element of Q, K and V that the problem's strides put there (by the formula the
// CPU oracle's rows use, oracle/tensor_rows.h), and every element of each tensor is taken exactly
// once over the pairs.
#include "oracle/pair_layout.h"

#include <gtest/gtest.h>

#include <vector>

#include "case/attention_case.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

std::vector<AttentionCase> shapes() {
  AttentionCase gqa;
  gqa.batch = 3;
  gqa.heads = 6;
  gqa.kv_heads = 2;
  gqa.seq_len_q = 7;
  gqa.seq_len_k = 5;
  gqa.head_dim = 8;
  gqa.layout = Layout::bhsd;
  gqa.row_padding = 3;
  AttentionCase mha = gqa;
  mha.heads = mha.kv_heads = 4;
  mha.layout = Layout::bshd;
  mha.row_padding = 0;
  mha.seq_len_q = 1;
  // V in the other layout than K, and Q, K, V views into one packed buffer: each its own strides.
  AttentionCase transposed_v = gqa;
  transposed_v.placement = Placement::v_other_layout;
  AttentionCase packed = gqa;
  packed.placement = Placement::qkv_packed;
  return {gqa, mha, transposed_v, packed};
}

TEST(PairLayout, EveryElementOfAChunkComesFromItsPlaceInQKAndVAndEachIsTakenOnce) {
  for (const AttentionCase& shape : shapes()) {
    const AttentionProblem problem = problem_of(shape);
    const PairGeometry g(problem);
    const std::int64_t pairs = problem.batch * problem.kv_heads;
    std::vector<int> q_taken(static_cast<std::size_t>(q_span(problem)), 0);
    std::vector<int> k_taken(static_cast<std::size_t>(k_span(problem)), 0);
    std::vector<int> v_taken(static_cast<std::size_t>(v_span(problem)), 0);
    const std::vector<std::uint16_t> q(q_taken.size()), k(k_taken.size()), v(v_taken.size());
    const AttentionTensors base{q.data(), k.data(), v.data(), nullptr};
    const auto q_offset = [&](const std::uint16_t* row) { return row - q.data(); };
    const auto k_offset = [&](const std::uint16_t* row) { return row - k.data(); };
    const auto v_offset = [&](const std::uint16_t* row) { return row - v.data(); };
    for (std::int64_t first : {std::int64_t{0}, std::int64_t{1}}) {  // chunks from pair 0 and 1
      const std::int64_t count = pairs - first;
      for (std::int64_t index = 0; index < count * (g.query_elements() + g.key_elements());
           ++index) {
        const PairElement e = locate_pair_element(g, first, index);
        const std::int64_t pair = first + e.chunk_pair;
        const std::int64_t batch = pair / problem.kv_heads, kv_head = pair % problem.kv_heads;
        if (e.is_query) {
          const std::int64_t head = kv_head * problem.group_size() + e.row / problem.seq_len_q;
          const std::int64_t i = e.row % problem.seq_len_q;
          ASSERT_EQ(e.source, q_offset(query_row(problem, base, batch, i, head)) + e.dim);
          if (first == 0) ++q_taken[static_cast<std::size_t>(e.source)];
        } else {
          ASSERT_EQ(e.source, k_offset(key_row(problem, base, batch, e.row, kv_head)) + e.dim);
          ASSERT_EQ(value_source(g, first, e),
                    v_offset(value_row(problem, base, batch, e.row, kv_head)) + e.dim);
          if (first == 0) {
            ++k_taken[static_cast<std::size_t>(e.source)];
            ++v_taken[static_cast<std::size_t>(value_source(g, first, e))];
          }
        }
      }
    }
    std::int64_t q_elements = 0, k_elements = 0;
    for (int taken : q_taken) {
      ASSERT_LE(taken, 1);
      q_elements += taken;
    }
    for (std::size_t at = 0; at < k_taken.size(); ++at) {
      ASSERT_LE(k_taken[at], 1);
      ASSERT_EQ(k_taken[at], v_taken[at]) << "K and V share this problem's strides";
      k_elements += k_taken[at];
    }
    EXPECT_EQ(q_elements, problem.batch * problem.heads * problem.seq_len_q * problem.head_dim);
    EXPECT_EQ(k_elements, problem.batch * problem.kv_heads * problem.seq_len_k * problem.head_dim);
  }
}

}  // namespace
}  // namespace attnfuzz
