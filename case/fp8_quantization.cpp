// SPDX-License-Identifier: BSD-3-Clause
#include "case/fp8_quantization.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace attnfuzz {

QuantizedTensor quantize_to_fp8(const std::vector<std::uint16_t>& drawn, const TensorShape& shape,
                                Dtype drawn_dtype, Dtype fp8, Descale descale,
                                std::int64_t kv_heads, std::int64_t group_size) {
  const std::span<const float> widen = widening_table(drawn_dtype);
  const auto group_of = [&](std::int64_t b, std::int64_t h) {
    return descale == Descale::per_kv_head ? b * kv_heads + h / group_size : 0;
  };
  const auto for_each_element = [&](auto visit) {
    for (std::int64_t b = 0; b < shape.batch; ++b) {
      for (std::int64_t s = 0; s < shape.seq_len; ++s) {
        for (std::int64_t h = 0; h < shape.heads; ++h) {
          for (std::int64_t d = 0; d < shape.head_dim; ++d) visit(b, h, shape.offset(b, s, h, d));
        }
      }
    }
  };
  QuantizedTensor quantized;
  std::vector<float> factor(static_cast<std::size_t>(shape.batch * kv_heads), 1.0f);
  if (descale != Descale::none) {
    std::vector<float> amax(factor.size(), 0.0f);
    for_each_element([&](std::int64_t b, std::int64_t h, std::int64_t offset) {
      float& largest = amax[static_cast<std::size_t>(group_of(b, h))];
      largest = std::max(largest, std::fabs(widen[drawn[static_cast<std::size_t>(offset)]]));
    });
    const float format_max = static_cast<float>(traits_of(fp8).max_finite);
    for (std::size_t group = 0; group < factor.size(); ++group) {
      const std::size_t source = descale == Descale::per_kv_head ? group : 0;
      // An all-zero group keeps 1: any factor gives its zeros, and 0 would make x / d NaN.
      factor[group] =
          amax[source] > 0.0f && std::isfinite(amax[source]) ? amax[source] / format_max : 1.0f;
    }
    quantized.descale = factor;
  }
  quantized.patterns.assign(drawn.size(), traits_of(fp8).poison_bits);
  for_each_element([&](std::int64_t b, std::int64_t h, std::int64_t offset) {
    const auto at = static_cast<std::size_t>(offset);
    const float value = widen[drawn[at]] / factor[static_cast<std::size_t>(group_of(b, h))];
    quantized.patterns[at] = float_to_dtype_saturating(value, fp8);
  });
  return quantized;
}

}  // namespace attnfuzz
