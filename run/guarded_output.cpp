// SPDX-License-Identifier: BSD-3-Clause
#include "run/guarded_output.h"

#include <algorithm>
#include <bit>
#include <sstream>
#include <string_view>

namespace attnfuzz {

GuardedOutput::GuardedOutput(const AttentionProblem& problem)
    : problem_(problem),
      span_(o_span(problem)),
      trailing_guard_(trailing_guard_elements(problem)),
      buffer_(static_cast<std::size_t>(kGuardElements + span_ + trailing_guard_),
              traits_of(problem.dtype).poison_bits) {
  buffer_.label("the output O", kGuardElements, kGuardElements + span_);
  if (problem.return_lse) {
    const std::int64_t lse_elements = lse_span(problem);
    lse_buffer_ = FencedBuffer<float>(static_cast<std::size_t>(lse_elements + 2 * kGuardElements),
                                      std::bit_cast<float>(kFloat32PoisonBits));
    lse_buffer_.label("the log-sum-exp output", kGuardElements, kGuardElements + lse_elements);
  }
}

namespace {

// A write past the margins that stopped short of the fence: nothing faulted, but the filler
// between the buffer and its fence changed.
std::optional<std::string> slack_write(std::string_view name, std::optional<std::ptrdiff_t> byte) {
  if (!byte) return std::nullopt;
  return *byte >= 0 ? "write past the end of " + std::string(name) +
                          ", beyond its guard margin: " + "byte " + std::to_string(*byte) +
                          " after the buffer was overwritten"
                    : "write before " + std::string(name) + ", beyond its guard margin: byte " +
                          std::to_string(-*byte) + " before the buffer was overwritten";
}

}  // namespace

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
  for (std::int64_t offset = 0; offset < trailing_guard_; ++offset) {
    if (changed(kGuardElements + span_ + offset)) {
      message << "write past the end of the output: guard element " << offset
              << " after the last element was overwritten";
      return message.str();
    }
  }
  if (!lse_buffer_.empty()) {
    const std::int64_t lse_end = kGuardElements + lse_span(problem_);
    for (std::int64_t offset = 1; offset <= kGuardElements; ++offset) {
      const auto bits = [&](std::int64_t at) {
        return std::bit_cast<std::uint32_t>(lse_buffer_[static_cast<std::size_t>(at)]);
      };
      if (bits(kGuardElements - offset) != kFloat32PoisonBits) {
        message << "write before the log-sum-exp output: guard element " << offset
                << " before its first element was overwritten";
        return message.str();
      }
      if (bits(lse_end + offset - 1) != kFloat32PoisonBits) {
        message << "write past the end of the log-sum-exp output: guard element " << offset - 1
                << " after its last element was overwritten";
        return message.str();
      }
    }
  }
  if (auto slack = slack_write("the output", buffer_.first_changed_slack_byte())) return slack;
  if (auto slack = slack_write("the log-sum-exp output", lse_buffer_.first_changed_slack_byte())) {
    return slack;
  }
  // Row padding: positions inside the span that belong to no element.
  std::vector<bool> is_element(static_cast<std::size_t>(span_), false);
  for (std::int64_t b = 0; b < problem_.batch; ++b) {
    for (std::int64_t s = 0; s < problem_.seq_len_q_of(b); ++s) {
      for (std::int64_t h = 0; h < problem_.heads; ++h) {
        const std::int64_t row = problem_.o_row_offset(b, s) + h * problem_.o_strides.head;
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
