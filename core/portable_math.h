// SPDX-License-Identifier: BSD-3-Clause
// Double arithmetic that gives the same bits on the host and on a CUDA device: every operation is
// one IEEE-754 operation rounded to nearest (+, -, *, /, sqrt, floor) or exact bit manipulation,
// and none is fused. The library functions the input generator needs (a natural logarithm, a
// cosine) are built from them, so a value drawn on the device equals the host's bit for bit by
// construction rather than by the chance that two math libraries agree.
//
// Why helpers instead of operators: nvcc contracts a * b + c into an fma by default, and an fma
// rounds once where the host rounds twice. The device side uses the _rn intrinsics, which nvcc
// never contracts; the host side is plain operators, compiled with -ffp-contract=off wherever the
// generator is built (CMakeLists.txt), so that no -march with FMA can contract them either.
#pragma once

#include <cstdint>

#include "core/host_device.h"

#if !defined(__CUDA_ARCH__)
#include <bit>
#include <cmath>
#endif

namespace attnfuzz::portable {

// ---- one rounding each ----

ATTNFUZZ_HOST_DEVICE inline double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
ATTNFUZZ_HOST_DEVICE inline double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
ATTNFUZZ_HOST_DEVICE inline double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
ATTNFUZZ_HOST_DEVICE inline double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
ATTNFUZZ_HOST_DEVICE inline double sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);  // IEEE-754 requires sqrt correctly rounded, as __dsqrt_rn is
#endif
}
// Exact (the result is an integer the double holds).
ATTNFUZZ_HOST_DEVICE inline double floor(double a) {
#if defined(__CUDA_ARCH__)
  return ::floor(a);
#else
  return std::floor(a);
#endif
}

// ---- exact bit manipulation ----

ATTNFUZZ_HOST_DEVICE inline std::uint64_t bits_of(double value) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(value));
#else
  return std::bit_cast<std::uint64_t>(value);
#endif
}
ATTNFUZZ_HOST_DEVICE inline double double_from_bits(std::uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  return std::bit_cast<double>(bits);
#endif
}

// ---- the functions: fdlibm's algorithms (Sun Microsystems, 1993, as in FreeBSD's msun), each
// under 1 ulp there; written again through the helpers above, in their order of operations ----

namespace detail {

// ln(2^extra x) for a normal x (fdlibm's e_log.c). x = 2^k m with m in [sqrt(2)/2, sqrt(2)) by
// exponent arithmetic, then ln(m) = ln(1 + f) = 2 atanh(s), s = f / (2 + f), from a minimax
// polynomial in s^2, and the result (k + extra) ln2 + ln(m) with ln2 split in two so that the
// product with its high part is exact. Without a branch, so that loops over it vectorise:
// fdlibm's choice between two sums is made by selecting one of both.
ATTNFUZZ_HOST_DEVICE inline double scaled_log_of_normal(double x, std::int32_t extra) {
  constexpr double kLn2High = 0x1.62e42fee00000p-1;  // its low 32 bits 0: k * kLn2High is exact
  constexpr double kLn2Low = 0x1.a39ef35793c76p-33;
  constexpr double kLg1 = 0x1.5555555555593p-1, kLg2 = 0x1.999999997fa04p-2,
                   kLg3 = 0x1.2492494229359p-2, kLg4 = 0x1.c71c51d8e78afp-3,
                   kLg5 = 0x1.7466496cb03dep-3, kLg6 = 0x1.39a09d078c69fp-3,
                   kLg7 = 0x1.2f112df3e5244p-3;
  const std::uint64_t bits = bits_of(x);
  const auto high_word = static_cast<std::uint32_t>(bits >> 32);
  std::int32_t k = extra + static_cast<std::int32_t>(high_word >> 20) - 1023;
  const std::uint32_t high = high_word & 0x000fffffu;  // the significand's top 20 bits
  // 0x100000 when the significand is at least sqrt(2): then m = significand / 2, one more in k.
  const std::uint32_t halve = (high + 0x95f64u) & 0x100000u;
  const double m = double_from_bits(
      (static_cast<std::uint64_t>(high | (halve ^ 0x3ff00000u)) << 32) | (bits & 0xffffffffu));
  k += static_cast<std::int32_t>(halve >> 20);
  const double f = sub(m, 1.0);  // exact: m in [sqrt(2)/2, sqrt(2))
  const double s = div(f, add(2.0, f));
  const double dk = static_cast<double>(k);  // exact
  const double z = mul(s, s);
  const double w = mul(z, z);
  const double t1 = mul(w, add(kLg2, mul(w, add(kLg4, mul(w, kLg6)))));
  const double t2 = mul(z, add(kLg1, mul(w, add(kLg3, mul(w, add(kLg5, mul(w, kLg7)))))));
  const double r = add(t2, t1);
  // Two ways to add the pieces, as fdlibm chooses by m: with f^2 / 2 apart when m is far from 1.
  const auto hx = static_cast<std::int32_t>(high);
  const bool far_from_one = ((hx - 0x6147a) | (0x6b851 - hx)) > 0;
  const double half_f_squared = mul(mul(0.5, f), f);
  const double far =
      sub(mul(dk, kLn2High),
          sub(sub(half_f_squared, add(mul(s, add(half_f_squared, r)), mul(dk, kLn2Low))), f));
  const double near = sub(mul(dk, kLn2High), sub(sub(mul(s, sub(f, r)), mul(dk, kLn2Low)), f));
  return far_from_one ? far : near;
}

}  // namespace detail

// ln(x) for positive finite x; a subnormal x is first brought into the normal range by an exact
// power of two.
ATTNFUZZ_HOST_DEVICE inline double natural_log(double x) {
  if (x < 0x1p-1022) return detail::scaled_log_of_normal(mul(x, 0x1p54), -54);
  return detail::scaled_log_of_normal(x, 0);
}

// ln(x) for x >= 2^-1022, without natural_log's branch for subnormals.
ATTNFUZZ_HOST_DEVICE inline double natural_log_of_normal(double x) {
  return detail::scaled_log_of_normal(x, 0);
}

namespace detail {

// sin(x) for |x| <= pi/4 (fdlibm's k_sin.c, its tail y = 0).
ATTNFUZZ_HOST_DEVICE inline double sin_near_zero(double x) {
  constexpr double kS1 = -0x1.5555555555549p-3, kS2 = 0x1.111111110f8a6p-7,
                   kS3 = -0x1.a01a019c161d5p-13, kS4 = 0x1.71de357b1fe7dp-19,
                   kS5 = -0x1.ae5e68a2b9cebp-26, kS6 = 0x1.5d93a5acfd57cp-33;
  const double z = mul(x, x);
  const double w = mul(z, z);
  const double r =
      add(add(kS2, mul(z, add(kS3, mul(z, kS4)))), mul(mul(z, w), add(kS5, mul(z, kS6))));
  const double v = mul(z, x);
  return add(x, mul(v, add(kS1, mul(z, r))));
}

// cos(x) for |x| <= pi/4 (fdlibm's k_cos.c, its tail y = 0): 1 - x^2/2 added last, with the
// rounding error of 1 - x^2/2 carried along.
ATTNFUZZ_HOST_DEVICE inline double cos_near_zero(double x) {
  constexpr double kC1 = 0x1.555555555554cp-5, kC2 = -0x1.6c16c16c15177p-10,
                   kC3 = 0x1.a01a019cb1590p-16, kC4 = -0x1.27e4f809c52adp-22,
                   kC5 = 0x1.1ee9ebdb4b1c4p-29, kC6 = -0x1.8fae9be8838d4p-37;
  const double z = mul(x, x);
  const double w = mul(z, z);
  const double r = add(mul(z, add(kC1, mul(z, add(kC2, mul(z, kC3))))),
                       mul(mul(w, w), add(kC4, mul(z, add(kC5, mul(z, kC6))))));
  const double half_z = mul(0.5, z);
  const double one_minus = sub(1.0, half_z);
  return add(one_minus, add(sub(sub(1.0, one_minus), half_z), mul(z, r)));
}

}  // namespace detail

// cos(2 pi u) for |u| < 2^50; the generator's u lie in [0, 1). The reduction is exact, which
// cos(2 * pi * u) through a library is not: 2 pi u = (n + r) pi / 2 with n = 4u rounded to an
// integer and r = 4u - n in [-1/2, 1/2], both exact in double, so only r pi / 2 rounds (once).
// Near a zero of the cosine the result keeps its relative accuracy.
ATTNFUZZ_HOST_DEVICE inline double cos_two_pi(double u) {
  constexpr double kHalfPi = 0x1.921fb54442d18p+0;
  const double four_u = mul(4.0, u);  // exact
  const double below = floor(four_u);
  const double fraction = sub(four_u, below);  // exact: the fraction of a double
  const bool rounds_up = fraction > 0.5;
  const double r = rounds_up ? sub(fraction, 1.0) : fraction;  // exact (Sterbenz)
  const double n = rounds_up ? add(below, 1.0) : below;        // exact: an integer below 2^52
  const double x = mul(r, kHalfPi);
  // By the quadrant, n mod 4: cos x, -sin x, -cos x, sin x. Both are computed and one selected,
  // without a branch, so that loops over draws vectorise.
  const auto quadrant = static_cast<std::int64_t>(n) & 3;
  const double magnitude =
      (quadrant & 1) != 0 ? detail::sin_near_zero(x) : detail::cos_near_zero(x);
  return quadrant == 1 || quadrant == 2 ? -magnitude : magnitude;
}

}  // namespace attnfuzz::portable
