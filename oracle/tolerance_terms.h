// SPDX-License-Identifier: BSD-3-Clause
// The tolerance model's terms for one case (the derivation is in docs/tolerance.md and at the top
// of tolerance.cpp): what every element's bound and every row's log-sum-exp bound are made of.
// Built on the host from the problem and the declared numerics, then used alike by the CPU's
// comparison and the GPU's (oracle/row_check.h), so both compute the same bound for an element.
#pragma once

#include <math.h>

#include "core/attention_problem.h"
#include "core/host_device.h"
#include "oracle/declared_numerics.h"

namespace attnfuzz {

// A verdict means something only where the bound pins every probability of a row to within this
// fraction of itself: exp(2 dS_i) - 1 <= 1/4, dS_i being the bound on a score's fp32 error
// (docs/tolerance.md, "Where a verdict means something"). Rows past it are inconclusive: a
// failure elsewhere still fails the case, but the case is never passed.
inline constexpr double kMaxProbabilitySpread = 1.0 / 4.0;

// A kernel may evaluate tanh approximately: PTX's tanh.approx.f32, which FlashAttention's
// soft-capping uses, has a relative error of at most 2^-10.987. 2^-10 covers it and the two fp32
// roundings of dividing by and multiplying with softcap.
inline constexpr double kSoftcapRelativeError = 0x1p-10;
// fp32 roundings ALiBi's bias takes part in: its product, its addition to the score, its division
// by and multiplication with the softmax scale (FlashAttention folds it so), the subtraction of
// the row maximum, and one to spare.
inline constexpr double kAlibiRoundings = 6.0;
// fp32 roundings of a log-sum-exp's final steps: logf (<= 2 ulp), the addition of the maximum,
// the scale's product, and one to spare.
inline constexpr double kLseRoundings = 5.0;

struct ToleranceTerms {
  double unit_roundoff;   // u of the output dtype
  double half_subnormal;  // eta
  double
      probability_unit_roundoff;  // u_p of the dtype P is rounded to: the output's unless declared
  double probability_half_subnormal;  // eta_p
  double magnitude_factor_base;  // 2u_p + accumulation_spread (+ u32 for V's descale factor, and
                                 // u_D for V dequantized into D, composed)
  double value_dequantization_unit_roundoff;  // u_D for V dequantized into D (declared), else 0
  double dequantized_value_half_subnormal;    // eta_D for V dequantized into D (declared), else 0
  double accumulator_underflow;  // Sk eta_acc: roundings of the accumulator below its normal range
  double accumulation_spread;    // what accumulating allows, relative to A (term 5)
  double score_gamma;       // gamma(D + 2), composed with u_D per fp8 Q or K dequantized into D
  bool scores_dequantized;  // an fp8 Q or K is dequantized into a 16-bit dtype (declared)
  double softcap;           // the problem's (0: none)
  bool alibi;
  double seq_len_k;
  const DeclaredNumerics* numerics;  // what the kernel declared (--accumulation), for messages;
                                     // host memory, never read on the device

  ToleranceTerms(const AttentionProblem& problem, const DeclaredNumerics& numerics);

  // Whether the accumulation term pins the outputs: it lets each move by accumulation_spread of its
  // scale A, which, as for the probabilities, must be at most kMaxProbabilitySpread for a verdict.
  // With fp32 accumulation that holds to a million keys; an fp16 accumulator reaches it near 120.
  ATTNFUZZ_HOST_DEVICE bool accumulation_judgeable() const {
    return accumulation_spread <= kMaxProbabilitySpread;
  }

  // dS_i: how far a kernel's fp32 score of row i may be from the exact one. The dot product and
  // the scale: gamma(D + 2) times the scores' bound. Soft-capping: tanh's slope is at most 1, so
  // that error passes through unamplified, and evaluating softcap * tanh(s / softcap) adds its own
  // (kSoftcapRelativeError of |result| <= min(softcap, bound)). ALiBi: the bias's product, its
  // addition and a rescaling by the softmax scale (as FlashAttention folds it), and the
  // subtraction of the row maximum, each one fp32 rounding of at most the bias's plus the score's
  // magnitude (kAlibiRoundings of them).
  ATTNFUZZ_HOST_DEVICE double score_error(double score_scale, double bias_scale) const {
    double error = score_gamma * score_scale;
    const double capped = capped_scale(score_scale);
    if (softcap > 0.0) error += kSoftcapRelativeError * capped;
    if (alibi) error += kAlibiRoundings * kFloat32UnitRoundoff * (bias_scale + capped);
    return error;
  }

  // exp(2 dS_i) - 1: how far, relatively, the bound lets each probability of the row move.
  ATTNFUZZ_HOST_DEVICE double probability_spread(double score_error) const {
    return ::expm1(2.0 * score_error);
  }

  // The bound on a row's log-sum-exp (docs/tolerance.md): each exponent off by dS_i moves the log
  // of the sum by at most dS_i; the fp32 sum of Sk exponentials and its other roundings (the
  // accumulation term, log(1 + x) <= x); and logf and the addition of the row maximum, a few
  // roundings of |L|, of the maximum (at most the scores' bound) and of log(Sk).
  ATTNFUZZ_HOST_DEVICE double lse_allowed(double expected, double score_error, double score_scale,
                                          double bias_scale) const {
    return score_error + accumulation_spread +
           kLseRoundings * kFloat32UnitRoundoff *
               (::fabs(expected) + capped_scale(score_scale) + bias_scale + ::log(seq_len_k + 1.0) +
                1.0);
  }

  // The bound of one output element (the formula at the top of tolerance.cpp).
  ATTNFUZZ_HOST_DEVICE double allowed(double expected, double magnitude, double inverse_row_sum,
                                      double score_error, double exact_value_abs_sum) const {
    const double spread = probability_spread(score_error);
    // Sum_j |V_jd| of the values the kernel multiplies: under a declared dequantization of V, at
    // most (1 + u_D) of the exact sum plus eta_D a key (exactly the sum otherwise).
    const double value_abs_sum =
        value_dequantization_unit_roundoff > 0.0
            ? exact_value_abs_sum * (1.0 + value_dequantization_unit_roundoff) +
                  seq_len_k * dequantized_value_half_subnormal
            : exact_value_abs_sum;
    const double before_rounding =
        (magnitude_factor_base + spread * (1.0 + magnitude_factor_base)) * magnitude +
        (probability_half_subnormal * (value_abs_sum + seq_len_k * ::fabs(expected)) +
         kFloat32UnitRoundoff / kEulersNumber * value_abs_sum + accumulator_underflow) *
            inverse_row_sum +
        // (a term that is 0 stays 0 where the spread is infinite: never 0 times infinity)
        (dequantized_value_half_subnormal > 0.0
             ? dequantized_value_half_subnormal * (1.0 + spread) * (1.0 + magnitude_factor_base)
             : 0.0);
    return before_rounding + unit_roundoff * (::fabs(expected) + before_rounding) + half_subnormal;
  }

 private:
  static constexpr double kEulersNumber = 2.718281828459045;  // std::numbers::e

  ATTNFUZZ_HOST_DEVICE double capped_scale(double score_scale) const {
    return softcap > 0.0 && !(score_scale < softcap) ? softcap : score_scale;  // std::min's order
  }
};

}  // namespace attnfuzz
