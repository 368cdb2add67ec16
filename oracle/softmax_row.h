// SPDX-License-Identifier: BSD-3-Clause
// The passes over a softmax row, the oracle's hottest loops after its matrix products: the maximum,
// the exponentials with their sum, and the normalised probabilities rounded to float. Vectorised
// (the exponentials through glibc's libmvec, 2, 4 or 8 lanes, <= 4 ulp, where the build found it;
// scalar std::exp elsewhere): float64 accurate far beyond what an fp16/bf16 kernel is judged on.
#pragma once

#include <cstdint>

namespace attnfuzz {

// The largest of values[0 .. count), count >= 1.
double row_maximum(const double* values, std::int64_t count);

// values[j] = exp(values[j] - shift) for j < count; returns their sum.
double exponentiate_and_sum(double* values, std::int64_t count, double shift);

// out[j] = float(values[j] * factor) for j < count, rounded to nearest.
void scale_to_float(const double* values, std::int64_t count, double factor, float* out);

}  // namespace attnfuzz
