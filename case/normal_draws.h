// SPDX-License-Identifier: BSD-3-Clause
// A stream's normal draws over a run of indices at once: what most distributions draw for most
// elements, and most of a small case's time in a fuzzing loop. Each value is InputStream::normal's
// bit for bit (the same operations, each rounded once), in a loop the compiler vectorises.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "case/input_draws.h"

namespace attnfuzz {

// values[i] = stream.normal(first + i) for every i in the span, by the fastest loop this CPU runs.
void draw_normals(const InputStream& stream, std::uint64_t first, std::span<double> values);

// For tests: each loop this CPU can run (AVX-512, AVX2, baseline), which must all agree.
struct NormalsLoop {
  std::string_view instruction_set;
  void (*draw)(const InputStream& stream, std::uint64_t first, std::span<double> values);
};
std::vector<NormalsLoop> normals_loops_this_cpu_runs();

}  // namespace attnfuzz
