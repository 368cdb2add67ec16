// SPDX-License-Identifier: BSD-3-Clause
// The Euclidean norm of a row widened to double, which both float64 oracles take of Q, K, V and dO
// rows for the scales their bounds need.
#pragma once

#include <cstdint>

namespace attnfuzz {

// |values[0 .. count)|_2. Widened fp16/bf16 values cannot overflow a sum of squares in double: no
// scaling needed.
double euclidean_norm(const double* values, std::int64_t count);

}  // namespace attnfuzz
