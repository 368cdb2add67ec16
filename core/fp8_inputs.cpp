// SPDX-License-Identifier: BSD-3-Clause
#include "core/fp8_inputs.h"

#include <cstddef>
#include <iterator>

namespace attnfuzz {

std::optional<InputStorage> parse_input_storage(std::string_view name) {
  for (std::size_t index = 0; index < std::size(kInputStorageNames); ++index) {
    if (kInputStorageNames[index] == name) return static_cast<InputStorage>(index);
  }
  return std::nullopt;
}

std::optional<Descale> parse_descale(std::string_view name) {
  for (const DescaleInfo& info : kDescales) {
    if (info.name == name) return info.descale;
  }
  return std::nullopt;
}

}  // namespace attnfuzz
