// SPDX-License-Identifier: BSD-3-Clause
#include "run/guarded_output.h"

#include <sstream>

namespace attnfuzz {

GuardedOutput::GuardedOutput(const AttentionProblem& problem)
    : problem_(problem),
      span_(span_elements(problem.o_strides, problem.batch, problem.seq_len_q, problem.heads,
                          problem.head_dim)),
      buffer_(static_cast<std::size_t>(span_ + 2 * kGuardElements),
              traits_of(problem.dtype).poison_bits) {}

std::optional<std::string> GuardedOutput::find_stray_write() const {
  const std::uint16_t poison = traits_of(problem_.dtype).poison_bits;
  auto changed = [&](std::int64_t position) {
    return buffer_[static_cast<std::size_t>(position)] != poison;
  };
  std::ostringstream message;
  for (std::int64_t offset = 1; offset <= kGuardElements; ++offset) {
    if (changed(kGuardElements - offset)) {
      message << "write before the output: guard element " << offset
              << " before element [0,0,0,0] was overwritten";
      return message.str();
    }
  }
  for (std::int64_t offset = 0; offset < kGuardElements; ++offset) {
    if (changed(kGuardElements + span_ + offset)) {
      message << "write past the end of the output: guard element " << offset
              << " after the last element was overwritten";
      return message.str();
    }
  }
  // Row padding: positions inside the span that belong to no element.
  std::vector<bool> is_element(static_cast<std::size_t>(span_), false);
  const TensorStrides& strides = problem_.o_strides;
  for (std::int64_t b = 0; b < problem_.batch; ++b) {
    for (std::int64_t s = 0; s < problem_.seq_len_q; ++s) {
      for (std::int64_t h = 0; h < problem_.heads; ++h) {
        const std::int64_t row = b * strides.batch + s * strides.seq + h * strides.head;
        for (std::int64_t d = 0; d < problem_.head_dim; ++d) is_element[row + d] = true;
      }
    }
  }
  for (std::int64_t position = 0; position < span_; ++position) {
    if (!is_element[position] && changed(kGuardElements + position)) {
      message << "write into the output's row padding at element offset " << position
              << " (not part of any output row)";
      return message.str();
    }
  }
  return std::nullopt;
}

}  // namespace attnfuzz
