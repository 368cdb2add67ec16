// Two paths with one result. Where the CPU has F16C (every x86-64 since 2013), eight patterns at a
// time go through the hardware's half-to-float conversion (fp16) or a 16-bit shift (bf16, the top
// half of a float), then float to double; elsewhere the 65536-entry widening table. The oracle
// reads each input row once, so at head_dim 64 the table's scalar loads were a few percent of its
// time.
#include "oracle/exact_widening.h"

#include <span>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace attnfuzz {
namespace {

void widen_by_table(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out) {
  const std::span<const float> widen = widening_table(dtype);
  for (std::int64_t i = 0; i < count; ++i) out[i] = widen[in[i]];
}

#if defined(__x86_64__)
__attribute__((target("avx2,f16c"))) void widen_by_f16c(const std::uint16_t* in, std::int64_t count,
                                                        Dtype dtype, double* out) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i patterns = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256 values =
        dtype == Dtype::fp16
            ? _mm256_cvtph_ps(patterns)
            : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(patterns), 16));
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(values)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)));
  }
  widen_by_table(in + i, count - i, dtype, out + i);
}

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
#endif

}  // namespace

void widen_to_double(const std::uint16_t* in, std::int64_t count, Dtype dtype, double* out) {
#if defined(__x86_64__)
  if (cpu_has_f16c()) {
    widen_by_f16c(in, count, dtype, out);
    return;
  }
#endif
  widen_by_table(in, count, dtype, out);
}

}  // namespace attnfuzz
