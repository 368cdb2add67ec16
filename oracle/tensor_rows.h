// SPDX-License-Identifier: BSD-3-Clause
// Rows of the strided input and output tensors, for the oracles that walk them: row (batch, seq,
// head) of a tensor is its head_dim contiguous elements (the head_dim stride is always 1).
#pragma once

#include <cstdint>
#include <span>

#include "core/attention_problem.h"

namespace attnfuzz {

// Element [batch, seq, head, 0] of a tensor laid out by `strides`.
template <typename Element>
inline Element* tensor_row(Element* tensor, const TensorStrides& strides, std::int64_t batch,
                           std::int64_t seq, std::int64_t head) {
  return tensor + batch * strides.batch + seq * strides.seq + head * strides.head;
}

// Rows of sequence `batch`, through the problem's addressing: packed (varlen), paged or dense.
inline const std::uint16_t* query_row(const AttentionProblem& problem,
                                      const AttentionTensors& tensors, std::int64_t batch,
                                      std::int64_t seq, std::int64_t head) {
  return tensors.q + problem.q_row_offset(batch, seq) + head * problem.q_strides.head;
}
inline const std::uint16_t* key_row(const AttentionProblem& problem,
                                    const AttentionTensors& tensors, std::int64_t batch,
                                    std::int64_t seq, std::int64_t kv_head) {
  return tensors.k + problem.k_row_offset(batch, seq) + kv_head * problem.k_strides.head;
}
inline const std::uint16_t* value_row(const AttentionProblem& problem,
                                      const AttentionTensors& tensors, std::int64_t batch,
                                      std::int64_t seq, std::int64_t kv_head) {
  return tensors.v + problem.v_row_offset(batch, seq) + kv_head * problem.v_strides.head;
}
template <typename Element>
inline Element* output_row(const AttentionProblem& problem, Element* output, std::int64_t batch,
                           std::int64_t seq, std::int64_t head) {
  return output + problem.o_row_offset(batch, seq) + head * problem.o_strides.head;
}

// out[d] = the value of pattern row[d] for d < dim, through a widening_table(): exact in float
// and so in double.
template <typename Real>
inline void widen_row(const std::uint16_t* row, std::int64_t dim, std::span<const float> widen,
                      Real* out) {
  for (std::int64_t d = 0; d < dim; ++d) out[d] = widen[row[d]];
}

}  // namespace attnfuzz
