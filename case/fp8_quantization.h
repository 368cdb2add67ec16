// SPDX-License-Identifier: BSD-3-Clause
// fp8 inputs as inference makes them: a tensor drawn in the case's 16-bit dtype, quantized to an
// fp8 format with descale factors, the way a framework quantizes activations or fills an fp8 KV
// cache. Per group (the whole tensor, or one (batch, KV head); a query head belongs to its group's
// KV head), the factor is d = amax / the format's largest finite value, so that each group's
// largest element (of the dense data a packed or paged case is drawn in) lands on the format's
// maximum and its small ones in the subnormals; each element
// becomes the saturating conversion of x / d (PTX's cvt.rn.satfinite). Without descale factors d is
// 1 and values past the format's range saturate. The oracle reads each element as decode(x) * d,
// exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "case/input_draws.h"
#include "core/dtype.h"
#include "core/fp8_inputs.h"

namespace attnfuzz {

struct QuantizedTensor {
  std::vector<std::uint16_t> patterns;  // the drawn buffer's size; outside the tensor, fp8 poison
  std::vector<float> descale;           // [batch][kv_heads]; empty without descale factors
};

// `drawn`: a buffer of `drawn_dtype` patterns laid out by `shape` (padding and guard tail poison).
// `group_size`: query heads per KV head for Q, 1 for K and V.
QuantizedTensor quantize_to_fp8(const std::vector<std::uint16_t>& drawn, const TensorShape& shape,
                                Dtype drawn_dtype, Dtype fp8, Descale descale,
                                std::int64_t kv_heads, std::int64_t group_size);

}  // namespace attnfuzz
