// SPDX-License-Identifier: BSD-3-Clause
// A ReferenceFixture's output written near its reference, and its rows checked one at a time on
// the host (check_row, in (b, h, i) order): what the row-by-row comparison's tests judge
// (tests/oracle/test_row_check.cpp, test_rows_summary.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "oracle/row_check.h"
#include "oracle/tensor_rows.h"
#include "oracle/tolerance.h"
#include "support/reference_fixture.h"

namespace attnfuzz {

inline double max_abs_of(const LargeBuffer<double>& values) {
  double max_abs = 0.0;
  for (double value : values) max_abs = std::max(max_abs, std::fabs(value));
  return max_abs;
}

// The reference rounded to the dtype, each element moved by up to `ulps` steps of the dtype.
inline void write_noisy_output(ReferenceFixture& fixture, int ulps, std::uint32_t seed) {
  const AttentionProblem& problem = fixture.problem;
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> step(-ulps, ulps);
  for (std::int64_t b = 0; b < problem.batch; ++b)
    for (std::int64_t h = 0; h < problem.heads; ++h)
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        std::uint16_t* row = output_row(problem, fixture.output.data(), b, i, h);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          const double expected =
              fixture.reference
                  .output[((b * problem.heads + h) * problem.seq_len_q + i) * problem.head_dim + d];
          row[d] = static_cast<std::uint16_t>(
              float_to_dtype(static_cast<float>(expected), problem.dtype) + step(random));
        }
      }
}

// The rows of `fixture`'s output checked one at a time, relative errors counted from one output
// rounding of the reference's largest |O| on (as compare_to_reference() counts them).
inline std::vector<RowCheck> row_checks_of(const ReferenceFixture& fixture) {
  const AttentionProblem& problem = fixture.problem;
  const ToleranceTerms terms(problem, {});
  const double max_abs = max_abs_of(fixture.reference.output);
  const auto widen = [&](std::uint16_t bits) {
    return static_cast<double>(dtype_to_float(bits, problem.dtype));
  };
  std::vector<RowCheck> rows;
  const std::int64_t dim = problem.head_dim;
  for (std::int64_t b = 0; b < problem.batch; ++b)
    for (std::int64_t h = 0; h < problem.heads; ++h)
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        const std::int64_t kv = h / problem.group_size();
        const RowArrays arrays{&fixture.reference.output[row * dim],
                               &fixture.reference.magnitude[row * dim],
                               &fixture.reference.value_abs_sum[(b * problem.kv_heads + kv) * dim],
                               fixture.reference.inverse_row_sum[row],
                               fixture.reference.score_scale[row],
                               fixture.reference.bias_scale[row],
                               output_row(problem, fixture.output.data(), b, i, h),
                               &fixture.plain[row * dim],
                               static_cast<std::uint64_t>(kv)};
        rows.push_back(check_row(arrays, dim, terms, rounding_steps_of(problem),
                                 traits_of(problem.dtype).poison_bits,
                                 terms.unit_roundoff * max_abs, widen));
      }
  return rows;
}

}  // namespace attnfuzz
