// SPDX-License-Identifier: BSD-3-Clause
#include "run/repeat_difference.h"

#include <bit>
#include <sstream>

#include "core/dtype.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {

std::optional<std::string> find_repeat_difference(const AttentionProblem& problem,
                                                  const std::uint16_t* first_output,
                                                  const std::uint16_t* repeat_output,
                                                  int repeat_run) {
  std::int64_t differing = 0;
  std::ostringstream first;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::uint16_t* row_a = output_row(problem, first_output, b, i, h);
        const std::uint16_t* row_b = output_row(problem, repeat_output, b, i, h);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          if (row_a[d] == row_b[d]) continue;
          if (differing++ == 0) {
            first.precision(9);
            first << "element (b=" << b << ", h=" << h << ", i=" << i << ", d=" << d << ") is "
                  << dtype_to_float(row_a[d], problem.dtype) << " in run 1 and "
                  << dtype_to_float(row_b[d], problem.dtype) << " in run " << repeat_run;
          }
        }
      }
    }
  }
  if (differing == 0) return std::nullopt;
  std::ostringstream line;
  line << "nondeterministic: " << first.str() << "; " << differing << " of "
       << problem.query_rows() * problem.heads * problem.head_dim
       << " elements differ between runs on the same inputs";
  return line.str();
}

std::optional<std::string> find_lse_repeat_difference(const AttentionProblem& problem,
                                                      const float* first_lse,
                                                      const float* repeat_lse, int repeat_run) {
  std::int64_t differing = 0;
  std::ostringstream first;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t at = problem.lse_offset(b, i, h);
        if (std::bit_cast<std::uint32_t>(first_lse[at]) ==
            std::bit_cast<std::uint32_t>(repeat_lse[at])) {
          continue;
        }
        if (differing++ == 0) {
          first.precision(9);
          first << "log-sum-exp of row (b=" << b << ", h=" << h << ", i=" << i << ") is "
                << first_lse[at] << " in run 1 and " << repeat_lse[at] << " in run " << repeat_run;
        }
      }
    }
  }
  if (differing == 0) return std::nullopt;
  return "nondeterministic: " + first.str() + "; " + std::to_string(differing) + " of " +
         std::to_string(problem.query_rows() * problem.heads) +
         " log-sum-exp rows differ between runs on the same inputs";
}

}  // namespace attnfuzz
