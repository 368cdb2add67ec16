// SPDX-License-Identifier: BSD-3-Clause
#include "case/attention_case.h"

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
// The fields whose use is `problem` have the same names in the case and the problem
// (case/case_schema.h); test_case_schema.cpp checks that each reaches it.
AttentionProblem shape_of(const AttentionCase& attention_case) {
  AttentionProblem problem;
#define ATTNFUZZ_COPY_IF_problem(member) problem.member = attention_case.member;
#define ATTNFUZZ_COPY_IF_layout(member)
#define ATTNFUZZ_COPY_IF_data(member)
#define ATTNFUZZ_COPY_IF_kernel(member)
#define ATTNFUZZ_COPY_PROBLEM_FIELD(member, Codec, key, value, use) ATTNFUZZ_COPY_IF_##use(member)
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_COPY_PROBLEM_FIELD, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_COPY_PROBLEM_FIELD
#undef ATTNFUZZ_COPY_IF_problem
#undef ATTNFUZZ_COPY_IF_layout
#undef ATTNFUZZ_COPY_IF_data
#undef ATTNFUZZ_COPY_IF_kernel
  problem.softmax_scale = effective_softmax_scale(attention_case);  // 0 in a case: the default
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
