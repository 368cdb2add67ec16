// SPDX-License-Identifier: BSD-3-Clause
// One row of scores on its way to the softmax, as both float64 oracles (the forward's and the
// backward's) take it: the keys the row sees within a block's, and the soft cap and ALiBi bias
// applied to the raw scores scale * Q_i . K_j.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/attention_problem.h"

namespace attnfuzz {

// The keys query row `query` of sequence `batch` sees, within the block's first `keys`.
inline KeyRange visible_keys_within(const AttentionProblem& problem, std::int64_t batch,
                                    std::int64_t query, std::int64_t keys) {
  KeyRange visible = problem.visible_keys_of(batch, query);
  visible.first = std::clamp<std::int64_t>(visible.first, 0, keys);
  visible.end = std::clamp<std::int64_t>(visible.end, visible.first, keys);
  return visible;
}

// seen[0 .. count) are the raw scores of keys first_key.. of the row: soft-capped, then biased,
// in place. `cap_slope`, when given, receives the soft cap's derivative 1 - tanh^2(s / softcap).
inline void logits_from_scores(const AttentionProblem& problem, std::int64_t batch,
                               std::int64_t head, std::int64_t query, std::int64_t first_key,
                               std::int64_t count, double* seen, double* cap_slope = nullptr) {
  if (problem.softcap > 0.0) {
    for (std::int64_t j = 0; j < count; ++j) {
      const double tanh_value = std::tanh(seen[j] / problem.softcap);
      seen[j] = problem.softcap * tanh_value;
      if (cap_slope != nullptr) cap_slope[j] = 1.0 - tanh_value * tanh_value;
    }
  }
  if (problem.alibi) {
    for (std::int64_t j = 0; j < count; ++j) {
      seen[j] += problem.score_bias(batch, head, query, first_key + j);
    }
  }
}

}  // namespace attnfuzz
