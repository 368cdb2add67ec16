// SPDX-License-Identifier: BSD-3-Clause
#include "case/normal_draws.h"

namespace attnfuzz {
namespace {

// One loop, compiled for each instruction set below with every call in it inlined (flatten), so
// that nothing stops it vectorising. Vector lanes round each operation as the scalar code does, so
// every instruction set gives the same bits. The file builds without contraction into fma, and
// with two flags that change no value (CMakeLists.txt): no errno from sqrt, whose arguments are
// never negative, and no trapping exceptions, so that a selection may compute both of its arms.
// The stream is copied so that no store to `values` can change it.
#define ATTNFUZZ_NORMALS_LOOP     \
  const InputStream own = stream; \
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = own.normal(first + i);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNFUZZ_PICKS_AN_INSTRUCTION_SET 1
// AVX-512's DQ part converts and multiplies 64-bit integers in vectors, as the uniform draws need.
[[gnu::target("avx512f,avx512dq"), gnu::flatten]] void normals_by_avx512(const InputStream& stream,
                                                                         std::uint64_t first,
                                                                         std::span<double> values) {
  ATTNFUZZ_NORMALS_LOOP
}
[[gnu::target("avx2"), gnu::flatten]] void normals_by_avx2(const InputStream& stream,
                                                           std::uint64_t first,
                                                           std::span<double> values) {
  ATTNFUZZ_NORMALS_LOOP
}
#endif

[[gnu::flatten]] void normals_by_baseline(const InputStream& stream, std::uint64_t first,
                                          std::span<double> values) {
  ATTNFUZZ_NORMALS_LOOP
}

#undef ATTNFUZZ_NORMALS_LOOP

}  // namespace

std::vector<NormalsLoop> normals_loops_this_cpu_runs() {
  std::vector<NormalsLoop> loops;
#if defined(ATTNFUZZ_PICKS_AN_INSTRUCTION_SET)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
    loops.push_back({"avx512", normals_by_avx512});
  }
  if (__builtin_cpu_supports("avx2")) loops.push_back({"avx2", normals_by_avx2});
#endif
  loops.push_back({"baseline", normals_by_baseline});
  return loops;
}

void draw_normals(const InputStream& stream, std::uint64_t first, std::span<double> values) {
  static const auto fastest = normals_loops_this_cpu_runs().front().draw;
  fastest(stream, first, values);
}

}  // namespace attnfuzz
