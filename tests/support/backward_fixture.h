// SPDX-License-Identifier: BSD-3-Clause
// One backward case (run/backward_check.h: what a kernel is handed, the float64 results) with
// zeroed dQ, dK and dV buffers laid out as Q, K and V for a test to fill, by a kernel or by hand.
#pragma once

#include <vector>

#include "oracle/backward_comparison.h"
#include "run/backward_check.h"

namespace attnfuzz {

struct BackwardFixture : BackwardCase {
  std::vector<std::uint16_t> dq, dk, dv;

  explicit BackwardFixture(const AttentionCase& c)
      : BackwardCase(c),
        dq(static_cast<std::size_t>(q_span(problem)), 0),
        dk(static_cast<std::size_t>(k_span(problem)), 0),
        dv(static_cast<std::size_t>(v_span(problem)), 0) {}

  BackwardTensors backward_tensors() {
    return {grad_output.data(), dq.data(), dk.data(), dv.data()};
  }
  std::uint16_t round(double value) const {
    return float_to_dtype(static_cast<float>(value), problem.dtype);
  }
  std::uint16_t* dq_at(std::int64_t b, std::int64_t h, std::int64_t i) {
    return dq.data() + problem.q_row_offset(b, i) + h * problem.q_strides.head;
  }
  std::uint16_t* dk_at(std::int64_t b, std::int64_t g, std::int64_t j) {
    return dk.data() + problem.k_row_offset(b, j) + g * problem.k_strides.head;
  }
  std::uint16_t* dv_at(std::int64_t b, std::int64_t g, std::int64_t j) {
    return dv.data() + problem.v_row_offset(b, j) + g * problem.v_strides.head;
  }
  // Under the bound and FlashAttention's rule, as the runner compares.
  GradientComparison compare() const {
    return compare_gradients(problem, forward, gradients, dq.data(), dk.data(), dv.data(), &plain);
  }
};

}  // namespace attnfuzz
