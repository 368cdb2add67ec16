// SPDX-License-Identifier: BSD-3-Clause
// The bias test: whether a kernel's errors lean one way more than correct rounding can explain.
//
// No per-element bound can see an output conversion that truncates instead of rounding to nearest
// even: each element moves by less than one output rounding step, which every bound forgives. Over
// a whole case it shows: the signed errors of a correct kernel are as often positive as negative,
// those of a truncating kernel all point toward zero. The test (docs/tolerance.md, "The bias
// test") measures each error in rounding steps of the output dtype at the expected value, signed
// two ways: by the expected value's sign (bias toward or away from zero) and as it is (bias up or
// down). Each query row is one sample: the weighted mean of its elements' signed errors, each
// weighted by (step / bound)^2, so that elements whose bound spans many steps (their error is
// mostly the computation's, large and noisy) count for little and those near one step (the output
// conversion's own error) for much; rows whose expected outputs are identical count once. The
// weights depend on the expected values and bounds only, never on the errors, so symmetric errors
// give symmetric samples. With the samples X_r it computes
//
//   Z = sum_r X_r / sqrt(sum_r X_r^2)       (self-normalised sum)
//   M = sum_r X_r / rows                    (mean bias, in rounding steps)
//
// and fails the case when |Z| > kBiasZLimit and |M| > kBiasMinSteps, for either signing, and M is
// more than kBiasMinSteps beyond the plain reference's M_plain (the same samples of the plain,
// unfused computation in the input precision, oracle/plain_attention.h). If the rows' errors are
// independent and symmetric about zero, P(|Z| > t) <= 2 exp(-t^2 / 2) whatever their sizes, so the
// limit gives at most kBiasFalseAlarmProbability per case; M keeps sub-step leanings that the
// model does not cover (an output just below a representable value that rounds up to it in every
// row) from failing a case on their number alone. M_plain covers correlated roundings of a correct
// computation: in a flat row every probability is 1/n, and rounding it to the input dtype errs
// the same way in every row of n keys, so a kernel that rounds normalised probabilities (JAX's
// dot_product_attention, an unfused framework) leans as the plain reference does.
#pragma once

#include <cstdint>
#include <unordered_set>

#include "core/dtype.h"

namespace attnfuzz {

// |Z| above this fails a case: 2 exp(-6.5^2 / 2) = 1.3e-9 per signing.
inline constexpr double kBiasZLimit = 6.5;
// ... and only when the mean bias is more than this many rounding steps (truncation: 1/2).
inline constexpr double kBiasMinSteps = 0.25;
// Both signings together, under the model above.
inline constexpr double kBiasFalseAlarmProbability = 2.7e-9;

// What the test found over a case.
struct RoundingBias {
  std::int64_t rows = 0;             // samples: distinct query rows with eligible elements
  double outward_z = 0.0;            // Z signed by the expected value: < 0 leans toward zero
  double outward_steps = 0.0;        // M for that signing
  double upward_z = 0.0;             // Z as signed: < 0 leans down
  double upward_steps = 0.0;         // M for that signing
  double plain_outward_steps = 0.0;  // M_plain: the plain reference's M, signed outward
  double plain_upward_steps = 0.0;   // ... and as signed
  bool leans = false;                // either signing beyond both limits: the case fails
  double ratio = 0.0;                // how close to failing: max over signings of
                                     // bias_closeness (below); > 1 fails
};

// How close one signing (its Z, mean steps M and the plain reference's M_plain) comes to failing:
// every limit must be passed, so min(|Z| / kBiasZLimit, |M| / kBiasMinSteps,
// |M - M_plain| / kBiasMinSteps); above 1 it fails.
double bias_closeness(double z, double steps, double plain_steps);

// Accumulates the samples row by row: begin_row, add for each element, end_row.
class RoundingBiasTest {
 public:
  explicit RoundingBiasTest(Dtype output_dtype);

  void begin_row();
  // One element: the float64 expected value, the kernel's (finite) value, the element's bound and
  // the plain reference's value (not finite: it counts as exact).
  void add(double expected, double actual, double allowed, double plain);
  // Ends the row; `row_fingerprint` identifies its expected outputs (rows with the same one
  // count once).
  void end_row(std::uint64_t row_fingerprint);

  RoundingBias result() const;

 private:
  double two_unit_roundoff_;  // rounding step at 1
  double min_normal_;
  // The row in progress.
  double row_outward_ = 0.0, row_upward_ = 0.0;  // weighted sums of the errors, in steps
  double row_weight_ = 0.0;
  double row_plain_outward_ = 0.0, row_plain_upward_ = 0.0;
  // Over the rows so far.
  double outward_sum_ = 0.0, outward_squares_ = 0.0;
  double upward_sum_ = 0.0, upward_squares_ = 0.0;
  double plain_outward_sum_ = 0.0, plain_upward_sum_ = 0.0;
  std::int64_t rows_ = 0;
  std::unordered_set<std::uint64_t> seen_rows_;
};

}  // namespace attnfuzz
