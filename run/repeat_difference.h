// SPDX-License-Identifier: BSD-3-Clause
// The determinism check: a kernel run again on the same inputs, into a freshly poisoned output,
// must write the same bits. A race, an atomic reduction in varying order or a read of
// uninitialised memory shows as an element that differs between runs, often by one ulp, well
// inside every tolerance: only a bitwise comparison sees it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/attention_problem.h"

namespace attnfuzz {

// One line naming the first element (in (batch, head, row, dim) order) whose bits differ between
// two outputs of `problem`'s layout, with both values and how many elements differ; nothing when
// every element is bitwise the same. `first_run` and `repeat_run` number the runs in the message.
std::optional<std::string> find_repeat_difference(const AttentionProblem& problem,
                                                  const std::uint16_t* first_output,
                                                  const std::uint16_t* repeat_output,
                                                  int repeat_run);

// The same for the log-sum-exp outputs of two runs (problem.return_lse): every row's bits.
std::optional<std::string> find_lse_repeat_difference(const AttentionProblem& problem,
                                                      const float* first_lse,
                                                      const float* repeat_lse, int repeat_run);

}  // namespace attnfuzz
