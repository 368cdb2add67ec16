// fp16/bf16 rows widened to double, exactly: the oracle's first step on every input row.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace attnfuzz {

// out[i] = the value of pattern in[i], for i < count. Every fp16/bf16 value, subnormals included,
// is exact in float and so in double; NaN patterns give NaN.
void widen_to_double(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out);

}  // namespace attnfuzz
