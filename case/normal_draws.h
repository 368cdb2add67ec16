// SPDX-License-Identifier: BSD-3-Clause
// A stream's normal draws over a run of indices at once: what most distributions draw for most
// elements, and most of a small case's time in a fuzzing loop. Each value is InputStream::normal's
// bit for bit (the same operations, each rounded once), in a loop the compiler vectorises.
#pragma once

#include <cstdint>
#include <span>

#include "case/input_draws.h"

namespace attnfuzz {

// values[i] = stream.normal(first + i) for every i in the span.
void draw_normals(const InputStream& stream, std::uint64_t first, std::span<double> values);

}  // namespace attnfuzz
