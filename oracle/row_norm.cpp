// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/row_norm.h"

#include <cmath>

namespace attnfuzz {

double euclidean_norm(const double* values, std::int64_t count) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < count; ++i) sum += values[i] * values[i];
  return std::sqrt(sum);
}

}  // namespace attnfuzz
