// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/softmax_row.h"

#include <cmath>

#if ATTNFUZZ_HAVE_LIBMVEC
// glibc declares exp's SIMD variants only under -ffast-math; declaring them here lets the
// compiler call libmvec's _ZGV*_exp from the loop below without relaxing any other math.
#pragma omp declare simd notinbranch
extern "C" double exp(double) noexcept;
#define ATTNFUZZ_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTNFUZZ_VECTOR_CLONES
#endif

namespace attnfuzz {

ATTNFUZZ_VECTOR_CLONES
double row_maximum(const double* values, std::int64_t count) {
  double maximum = values[0];
#pragma omp simd reduction(max : maximum)
  for (std::int64_t j = 1; j < count; ++j) maximum = values[j] > maximum ? values[j] : maximum;
  return maximum;
}

ATTNFUZZ_VECTOR_CLONES
double exponentiate_and_sum(double* values, std::int64_t count, double shift) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < count; ++j) {
    values[j] = exp(values[j] - shift);
    sum += values[j];
  }
  return sum;
}

ATTNFUZZ_VECTOR_CLONES
void scale_to_float(const double* values, std::int64_t count, double factor, float* out) {
#pragma omp simd
  for (std::int64_t j = 0; j < count; ++j) out[j] = static_cast<float>(values[j] * factor);
}

}  // namespace attnfuzz
