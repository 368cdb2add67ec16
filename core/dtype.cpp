// SPDX-License-Identifier: BSD-3-Clause
#include "core/dtype.h"

#include <array>
#include <vector>

namespace attnfuzz {

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const DtypeTraits& traits : kDtypeTraits) {
    if (traits.name == name) return traits.dtype;
  }
  return std::nullopt;
}

std::span<const float> widening_table(Dtype dtype) {
  static const auto tables = [] {
    std::array<std::vector<float>, std::size(kDtypeTraits)> built;
    for (const DtypeTraits& traits : kDtypeTraits) {
      auto& table = built[static_cast<int>(traits.dtype)];
      table.resize(1u << 16);
      for (std::uint32_t bits = 0; bits < (1u << 16); ++bits) {
        table[bits] = dtype_to_float(static_cast<std::uint16_t>(bits), traits.dtype);
      }
    }
    return built;
  }();
  return tables[static_cast<int>(dtype)];
}

}  // namespace attnfuzz
