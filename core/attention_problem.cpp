// SPDX-License-Identifier: BSD-3-Clause
#include "core/attention_problem.h"

#include <cmath>
#include <sstream>

namespace attnfuzz {

std::optional<Layout> parse_layout(std::string_view name) {
  for (int index = 0; index < static_cast<int>(std::size(kLayoutNames)); ++index) {
    if (kLayoutNames[index] == name) return static_cast<Layout>(index);
  }
  return std::nullopt;
}

TensorStrides make_strides(Layout layout, std::int64_t seq_len, std::int64_t heads,
                           std::int64_t head_dim, std::int64_t row_padding) {
  const std::int64_t row = head_dim + row_padding;
  if (layout == Layout::bshd) return {seq_len * heads * row, heads * row, row};
  return {heads * seq_len * row, row, seq_len * row};
}

std::int64_t span_elements(const TensorStrides& strides, std::int64_t batch, std::int64_t seq_len,
                           std::int64_t heads, std::int64_t head_dim) {
  return (batch - 1) * strides.batch + (seq_len - 1) * strides.seq + (heads - 1) * strides.head +
         head_dim;
}

AttentionProblem with_layout(AttentionProblem problem, Layout layout, std::int64_t row_padding) {
  const std::int64_t dim = problem.head_dim;
  problem.q_strides = make_strides(layout, problem.seq_len_q, problem.heads, dim, row_padding);
  problem.o_strides = problem.q_strides;
  problem.k_strides = make_strides(layout, problem.seq_len_k, problem.kv_heads, dim, row_padding);
  problem.v_strides = problem.k_strides;
  return problem;
}

std::string describe_shape(const AttentionProblem& problem) {
  std::ostringstream text;
  text << "B=" << problem.batch << " H=" << problem.heads;
  if (problem.kv_heads != problem.heads) text << "/" << problem.kv_heads;
  text << " Sq=" << problem.seq_len_q << " Sk=" << problem.seq_len_k << " D=" << problem.head_dim
       << " " << dtype_name(problem.dtype);
  if (problem.causal) text << " causal";
  return text.str();
}

double attention_flops(const AttentionProblem& problem) {
  return 4.0 * static_cast<double>(problem.batch) * static_cast<double>(problem.heads) *
         static_cast<double>(problem.seq_len_q) * static_cast<double>(problem.seq_len_k) *
         static_cast<double>(problem.head_dim);
}

}  // namespace attnfuzz
