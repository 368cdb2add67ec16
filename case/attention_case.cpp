// SPDX-License-Identifier: BSD-3-Clause
#include "case/attention_case.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace attnfuzz {

double effective_softmax_scale(const AttentionCase& attention_case) {
  return attention_case.softmax_scale > 0.0
             ? attention_case.softmax_scale
             : 1.0 / std::sqrt(static_cast<double>(attention_case.head_dim));
}

// The strides are products of the sizes, which overflow for a case outside the valid range; a
// description must be safe for any case, since error messages describe the invalid ones
// (matrix_parse_check.cpp, for one). The fields whose use is `problem` have the same names in the
// case and the problem (case/case_schema.h); test_case_schema.cpp checks that each reaches it.
AttentionProblem problem_shape_of(const AttentionCase& attention_case) {
  AttentionProblem problem;
#define ATTNFUZZ_COPY_IF_problem(member) problem.member = attention_case.member;
#define ATTNFUZZ_COPY_IF_layout(member)
#define ATTNFUZZ_COPY_IF_data(member)
#define ATTNFUZZ_COPY_IF_kernel(member)
#define ATTNFUZZ_COPY_IF_passes(member)
#define ATTNFUZZ_COPY_IF_storage(member) problem.member = attention_case.member;
#define ATTNFUZZ_COPY_PROBLEM_FIELD(member, Codec, key, value, use) ATTNFUZZ_COPY_IF_##use(member)
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_COPY_PROBLEM_FIELD, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_COPY_PROBLEM_FIELD
#undef ATTNFUZZ_COPY_IF_problem
#undef ATTNFUZZ_COPY_IF_layout
#undef ATTNFUZZ_COPY_IF_data
#undef ATTNFUZZ_COPY_IF_passes
#undef ATTNFUZZ_COPY_IF_storage
#undef ATTNFUZZ_COPY_IF_kernel
  problem.softmax_scale = effective_softmax_scale(attention_case);  // 0 in a case: the default
  problem.varlen_q = !problem.seq_lens_q.empty();
  problem.varlen_k = !problem.seq_lens_k.empty();
  return problem;
}

AttentionProblem problem_of(const AttentionCase& attention_case) {
  AttentionProblem problem = problem_shape_of(attention_case);
  // A window at least as wide as every sequence cuts no row (row i's left edge is before key 0
  // once window_left >= seq_len_k, its right edge past the last key once window_right >=
  // seq_len_q): kernels are given it clamped to that width, the same mask, rather than a width
  // whose arithmetic could overflow (a diagonal minus 2^63).
  problem.window_left = std::min(problem.window_left, problem.seq_len_k);
  problem.window_right = std::min(problem.window_right, problem.seq_len_q);
  return with_layout(std::move(problem), attention_case.layout, attention_case.row_padding,
                     attention_case.placement);
}

std::optional<CaseInconsistency> find_inconsistency(const AttentionCase& attention_case) {
  const auto lengths_problem =
      [&](CaseField field, const std::vector<std::int64_t>& lengths, std::string_view key,
          std::int64_t longest, std::string_view longest_key) -> std::optional<CaseInconsistency> {
    if (lengths.empty()) return std::nullopt;
    if (static_cast<std::int64_t>(lengths.size()) != attention_case.batch) {
      return CaseInconsistency{field, std::string(key) + " has " + std::to_string(lengths.size()) +
                                          " lengths but batch is " +
                                          std::to_string(attention_case.batch) +
                                          " (one length per sequence)"};
    }
    std::int64_t total = 0;
    for (const std::int64_t length : lengths) {
      if (length > longest) {
        return CaseInconsistency{field, std::string(key) + " has a sequence of " +
                                            std::to_string(length) + " rows, longer than " +
                                            std::string(longest_key) + " " +
                                            std::to_string(longest) + " (the longest allowed)"};
      }
      total += length;
    }
    if (total > std::numeric_limits<std::int32_t>::max()) {
      return CaseInconsistency{field, std::string(key) + " sums to " + std::to_string(total) +
                                          " rows, past int32 (cu_seqlens)"};
    }
    return std::nullopt;
  };
  if (auto problem = lengths_problem(CaseField::seq_lens_q, attention_case.seq_lens_q, "seq_lens_q",
                                     attention_case.seq_len_q, "seq_len_q")) {
    return problem;
  }
  if (auto problem = lengths_problem(CaseField::seq_lens_k, attention_case.seq_lens_k, "seq_lens_k",
                                     attention_case.seq_len_k, "seq_len_k")) {
    return problem;
  }
  if (attention_case.page_size > 0) {
    const std::int64_t pages_per_sequence =
        pages_for(attention_case.seq_len_k, attention_case.page_size);
    if (pages_per_sequence >
        std::numeric_limits<std::int32_t>::max() / std::max<std::int64_t>(attention_case.batch, 1) -
            1) {
      return CaseInconsistency{CaseField::page_size,
                               "page_size " + std::to_string(attention_case.page_size) + " makes " +
                                   std::to_string(pages_per_sequence) +
                                   " pages per sequence: the pool's page numbers pass int32"};
    }
  }
  return std::nullopt;
}

std::string describe_case(const AttentionCase& attention_case) {
  std::ostringstream text;
  text << describe_shape(problem_shape_of(attention_case));
  if (attention_case.layout != Layout::bshd) text << ' ' << layout_name(attention_case.layout);
  if (attention_case.row_padding != 0) text << " pad=" << attention_case.row_padding;
  if (attention_case.placement != Placement::shared) {
    text << ' ' << placement_name(attention_case.placement);
  }
  text << " data=" << distribution_name(attention_case.data) << " seed=" << attention_case.seed;
  if (attention_case.injection.value != SpecialValue::none) {
    text << " inject=" << format_injection(attention_case.injection);
  }
  if (attention_case.backward) text << " backward";
  return text.str();
}

}  // namespace attnfuzz
