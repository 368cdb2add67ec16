// SPDX-License-Identifier: BSD-3-Clause
// How GoogleTest prints the catalogue rows that parameterised tests run over: by name, so that
// ctest lists "GetParam() = drop_last_key_tile" instead of the row's bytes.
#pragma once

#include <ostream>

#include "fuzz/properties.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

inline void PrintTo(const PlantedBugInfo& info, std::ostream* out) {
  *out << info.name;
}

inline void PrintTo(const PropertyInfo& info, std::ostream* out) {
  *out << info.name;
}

}  // namespace attnfuzz
