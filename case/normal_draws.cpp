// SPDX-License-Identifier: BSD-3-Clause
#include "case/normal_draws.h"

#include <cstddef>

namespace attnfuzz {
namespace {

// One loop, compiled for each instruction set below with every call in it inlined (flatten), so
// that nothing stops it vectorising. Vector lanes round each operation as the scalar code does
// (the file builds without contraction into fma and without errno from sqrt, CMakeLists.txt), so
// every instruction set gives the same bits.
#define ATTNFUZZ_NORMALS_LOOP                                                    \
  const InputStream own = stream; /* a copy, which no store to out can change */ \
  for (std::size_t i = 0; i < count; ++i) out[i] = own.normal(first + i);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNFUZZ_PICKS_AN_INSTRUCTION_SET 1
// AVX-512's DQ part converts and multiplies 64-bit integers in vectors, as the uniform draws need.
[[gnu::target("avx512f,avx512dq"), gnu::flatten]] void normals_by_avx512(const InputStream& stream,
                                                                         std::uint64_t first,
                                                                         std::size_t count,
                                                                         double* out) {
  ATTNFUZZ_NORMALS_LOOP
}
[[gnu::target("avx2"), gnu::flatten]] void normals_by_avx2(const InputStream& stream,
                                                           std::uint64_t first, std::size_t count,
                                                           double* out) {
  ATTNFUZZ_NORMALS_LOOP
}
#endif

[[gnu::flatten]] void normals_by_baseline(const InputStream& stream, std::uint64_t first,
                                          std::size_t count, double* out) {
  ATTNFUZZ_NORMALS_LOOP
}

using NormalsLoop = void (*)(const InputStream&, std::uint64_t, std::size_t, double*);

NormalsLoop fastest_normals_loop() {
#if defined(ATTNFUZZ_PICKS_AN_INSTRUCTION_SET)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
    return normals_by_avx512;
  }
  if (__builtin_cpu_supports("avx2")) return normals_by_avx2;
#endif
  return normals_by_baseline;
}

}  // namespace

void draw_normals(const InputStream& stream, std::uint64_t first, std::span<double> values) {
  static const NormalsLoop loop = fastest_normals_loop();
  loop(stream, first, values.size(), values.data());
}

}  // namespace attnfuzz
