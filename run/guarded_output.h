// SPDX-License-Identifier: BSD-3-Clause
// The kernel's output buffer, poisoned and fenced. Every element starts as the dtype's poison NaN
// pattern; guard margins before and after the tensor and the row padding inside it must still hold
// that pattern after the kernel ran. An element still holding it was never written (the tolerance
// check reports those); a changed guard is a write outside the tensor (reported here). Past the
// margins lie inaccessible pages (core/fenced_buffer.h): a write further out faults, named.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/attention_problem.h"
#include "core/fenced_buffer.h"

namespace attnfuzz {

class GuardedOutput {
 public:
  // The margins of core/attention_problem.h (output_trailing_guard_elements after O).
  static constexpr std::int64_t kGuardElements = kOutputGuardElements;
  static std::int64_t trailing_guard_elements(const AttentionProblem& problem) {
    return output_trailing_guard_elements(problem);
  }

  explicit GuardedOutput(const AttentionProblem& problem);

  std::uint16_t* data() { return buffer_.data() + kGuardElements; }  // element [0, 0, 0, 0]
  const std::uint16_t* data() const { return buffer_.data() + kGuardElements; }
  std::int64_t span() const { return span_; }
  // The whole buffer, margins included: what a device copy mirrors.
  FencedBuffer<std::uint16_t>& buffer() { return buffer_; }

  // The log-sum-exp output (fp32, poisoned and fenced alike) when the problem returns it; else
  // null.
  float* lse() { return lse_buffer_.empty() ? nullptr : lse_buffer_.data() + kGuardElements; }
  const float* lse() const {
    return lse_buffer_.empty() ? nullptr : lse_buffer_.data() + kGuardElements;
  }
  FencedBuffer<float>& lse_buffer() { return lse_buffer_; }

  // One line describing the first write outside the output tensors, or nothing when none.
  std::optional<std::string> find_stray_write() const;

 private:
  AttentionProblem problem_;
  std::int64_t span_ = 0;
  std::int64_t trailing_guard_ = kGuardElements;
  FencedBuffer<std::uint16_t> buffer_;
  FencedBuffer<float> lse_buffer_;
};

}  // namespace attnfuzz
