// SPDX-License-Identifier: BSD-3-Clause
// Whole rows of a dtype converted at once: widened exactly to double (the oracle's inputs), or
// float values rounded to the dtype in place (the plain same-precision reference's every step).
// The same results as the one-value conversions of core/dtype.h, eight values at a time where the
// CPU has F16C.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace attnfuzz {

// out[i] = the value of pattern in[i], for i < count. Every value of every dtype, subnormals
// included, is exact in float and so in double; NaN patterns give NaN.
void widen_to_double(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out);

// values[i] = round_to_dtype(values[i], dtype) for i < count: round to nearest, ties to even,
// overflow to infinity (e4m3: NaN); a NaN stays a NaN (its payload may differ).
void round_to_dtype_in_place(float* values, std::int64_t count, Dtype dtype);

}  // namespace attnfuzz
