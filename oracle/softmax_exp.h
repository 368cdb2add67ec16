// The exponentials of a softmax row, the oracle's hottest loop after DGEMM. Vectorised through
// glibc's libmvec (exp in 2, 4 or 8 lanes, <= 4 ulp) where the build found it, scalar std::exp
// elsewhere: both are float64 accurate far beyond what an fp16/bf16 kernel is judged on.
#pragma once

#include <cstdint>

namespace attnfuzz {

// values[j] = exp(values[j] - shift) for j < count; returns their sum.
double exponentiate_and_sum(double* values, std::int64_t count, double shift);

}  // namespace attnfuzz
