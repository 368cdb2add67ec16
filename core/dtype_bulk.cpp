// SPDX-License-Identifier: BSD-3-Clause
// Two paths with one result. For fp16 and bf16 where the CPU has F16C (every x86-64 since 2013),
// eight values at a time go through the hardware's conversions between half and float (round to
// nearest even, as float_to_fp16) or, for bf16, 16-bit shifts and the same rounding add as
// float_to_bf16; elsewhere, and for fp8 always, the scalar conversions of core/dtype.h. The oracle
// and the plain reference convert every row they read or round, and one value at a time that was
// a large share of their time.
#include "core/dtype_bulk.h"

#include <span>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace attnfuzz {
namespace {

void widen_one_by_one(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out) {
  const std::span<const float> widen = widening_table(dtype);
  for (std::int64_t i = 0; i < count; ++i) out[i] = widen[in[i]];
}

void round_one_by_one(float* values, std::int64_t count, Dtype dtype) {
  for (std::int64_t i = 0; i < count; ++i) values[i] = round_to_dtype(values[i], dtype);
}

#if defined(__x86_64__)
bool cpu_has_f16c() {
  // AVX2 through the compiler (it also asks whether the OS saves the ymm registers); F16C, which
  // not every compiler's __builtin_cpu_supports knows, straight from CPUID leaf 1.
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
           (ecx & bit_F16C) != 0;
  }();
  return has;
}

__attribute__((target("avx2,f16c"))) __m256 widen_eight(__m128i patterns, Dtype dtype) {
  return dtype == Dtype::fp16
             ? _mm256_cvtph_ps(patterns)
             : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(patterns), 16));
}

__attribute__((target("avx2,f16c"))) void widen_by_f16c(const std::uint16_t* in, std::int64_t count,
                                                        Dtype dtype, double* out) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 values =
        widen_eight(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)), dtype);
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(values)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)));
  }
  _mm256_zeroupper();  // as in round_by_f16c below
  widen_one_by_one(in + i, count - i, dtype, out + i);
}

// float_to_bf16 on eight lanes: NaNs keep their top half with the quiet bit set, everything else
// gets the round-to-nearest-even add before the low half is cut.
__attribute__((target("avx2,f16c"))) __m256 round_eight_to_bf16(__m256 values) {
  const __m256i bits = _mm256_castps_si256(values);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lowest_kept));
  const __m256i quieted = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
  const __m256i chosen = _mm256_blendv_epi8(rounded, quieted, is_nan);
  return _mm256_castsi256_ps(
      _mm256_and_si256(chosen, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

__attribute__((target("avx2,f16c"))) void round_by_f16c(float* values, std::int64_t count,
                                                        Dtype dtype) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 in = _mm256_loadu_ps(values + i);
    const __m256 out =
        dtype == Dtype::fp16
            ? _mm256_cvtph_ps(_mm256_cvtps_ph(in, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
            : round_eight_to_bf16(in);
    _mm256_storeu_ps(values + i, out);
  }
  // Clean ymm state before the scalar tail and the caller's SSE code: GCC tail-calls the tail
  // without its own vzeroupper, and dirty upper halves made every SSE instruction after it pay
  // (the plain reference's exp loop and the comparison ran 4 to 15 times slower).
  _mm256_zeroupper();
  round_one_by_one(values + i, count - i, dtype);
}
#endif

}  // namespace

void widen_to_double(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out) {
#if defined(__x86_64__)
  if (!is_fp8(dtype) && cpu_has_f16c()) {
    widen_by_f16c(in, count, dtype, out);
    return;
  }
#endif
  widen_one_by_one(in, count, dtype, out);
}

void round_to_dtype_in_place(float* values, std::int64_t count, Dtype dtype) {
#if defined(__x86_64__)
  if (!is_fp8(dtype) && cpu_has_f16c()) {
    round_by_f16c(values, count, dtype);
    return;
  }
#endif
  round_one_by_one(values, count, dtype);
}

}  // namespace attnfuzz
