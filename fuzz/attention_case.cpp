#include "fuzz/attention_case.h"

#include <cmath>
#include <sstream>

namespace attnfuzz {

double effective_softmax_scale(const AttentionCase& attention_case) {
  return attention_case.softmax_scale > 0.0
             ? attention_case.softmax_scale
             : 1.0 / std::sqrt(static_cast<double>(attention_case.head_dim));
}

namespace {

// The case's sizes, without strides. The strides are products of the sizes, which overflow for a
// case outside the valid range; a description must be safe for any case, since error messages
// describe the invalid ones (matrix_parse_check.cpp, for one).
AttentionProblem shape_of(const AttentionCase& attention_case) {
  AttentionProblem problem;
  problem.batch = attention_case.batch;
  problem.heads = attention_case.heads;
  problem.kv_heads = attention_case.kv_heads;
  problem.seq_len_q = attention_case.seq_len_q;
  problem.seq_len_k = attention_case.seq_len_k;
  problem.head_dim = attention_case.head_dim;
  problem.dtype = attention_case.dtype;
  problem.causal = attention_case.causal;
  problem.softmax_scale = effective_softmax_scale(attention_case);
  return problem;
}

}  // namespace

AttentionProblem problem_of(const AttentionCase& attention_case) {
  return with_layout(shape_of(attention_case), attention_case.layout, attention_case.row_padding);
}

std::string describe_case(const AttentionCase& attention_case) {
  std::ostringstream text;
  text << describe_shape(shape_of(attention_case));
  if (attention_case.layout != Layout::bshd) text << ' ' << layout_name(attention_case.layout);
  if (attention_case.row_padding != 0) text << " pad=" << attention_case.row_padding;
  text << " data=" << distribution_name(attention_case.data) << " seed=" << attention_case.seed;
  if (attention_case.injection.value != SpecialValue::none) {
    text << " inject=" << format_injection(attention_case.injection);
  }
  return text.str();
}

}  // namespace attnfuzz
