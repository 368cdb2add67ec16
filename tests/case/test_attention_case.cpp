// SPDX-License-Identifier: BSD-3-Clause
// The problem a case describes: a window wider than every sequence reaches kernels clamped to the
// sequences' lengths, and every row of every sequence sees the very keys the case's own window
// gives it.
#include "case/attention_case.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>

#include "fuzz/case_generator.h"

namespace attnfuzz {
namespace {

// A window side: none, narrow, around the sequence lengths, or as wide as int64 goes.
rc::Gen<std::int64_t> window_side() {
  return rc::gen::weightedOneOf<std::int64_t>({
      {1, rc::gen::just<std::int64_t>(-1)},
      {2, uniform<std::int64_t>(0, 300)},
      {1, rc::gen::just(std::numeric_limits<std::int64_t>::max())},
      {1, uniform<std::int64_t>(std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max())},
  });
}

RC_GTEST_PROP(AttentionCase, AWindowClampedToTheSequencesGivesEveryRowTheSameKeys, ()) {
  AttentionCase attention_case =
      *with_variants(small_case({.max_seq_len = 160, .distributions = {}, .injections = false}));
  attention_case.window_left = *window_side();
  attention_case.window_right = *window_side();
  const AttentionProblem problem = problem_of(attention_case);
  RC_ASSERT(problem.window_left <= problem.seq_len_k);
  RC_ASSERT(problem.window_right <= problem.seq_len_q);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    const std::int64_t seq_q = problem.seq_len_q_of(b);
    const std::int64_t seq_k = problem.seq_len_k_of(b);
    for (std::int64_t i = 0; i < seq_q; ++i) {
      const KeyRange as_given =
          keys_about_diagonal(i + seq_k - seq_q, attention_case.causal, attention_case.window_left,
                              attention_case.window_right, seq_k);
      const KeyRange clamped = problem.visible_keys_of(b, i);
      RC_ASSERT(as_given.first == clamped.first);
      RC_ASSERT(as_given.end == clamped.end);
    }
  }
}

}  // namespace
}  // namespace attnfuzz
