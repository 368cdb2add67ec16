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

#include <math.h>

#include "core/attention_problem.h"
#include "core/dtype.h"
#include "core/fingerprint_set.h"
#include "core/host_device.h"

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

// Whether x is neither infinite nor NaN (x - x is NaN exactly then): one test for host and device.
ATTNFUZZ_HOST_DEVICE inline bool is_finite(double x) {
  return x - x == 0.0;
}

// The output dtype's rounding steps: what an error is measured in, and which rows give no sample.
struct RoundingSteps {
  double two_unit_roundoff;  // the step at 1
  double min_normal;         // below it the step is absolute: no sample
  // Rows whose largest probability is within this of 1 give no sample (0: every row samples).
  // Where V is fp8 with descale factors, such a row's output is mostly one key's value times its
  // factor, and that product's rounding offset depends only on the value's fp8 significand, of
  // which there are 4 or 8: their offsets need not cancel, so every such row leans alike (a correct
  // kernel leaned 0.26 steps, z = 11.6, on rows of large scores). Beyond 16 u the key's own term,
  // p times the product, is 8 steps or more from the product and moves with p row to row, which
  // spreads the offsets over the grid again. The gap is a measured one, not a proof: other keys
  // that hold the same fp8 value may keep some lean.
  double one_key_gap = 0.0;

  // `values_off_grid`: V's values need not lie on the output dtype's grid (fp8 V with factors).
  explicit RoundingSteps(Dtype output_dtype, bool values_off_grid = false);

  // Whether a row whose largest probability is `largest_probability` gives no sample.
  ATTNFUZZ_HOST_DEVICE bool sits_on_one_key(double largest_probability) const {
    return 1.0 - largest_probability < one_key_gap;
  }
};

// The steps of a problem's output, and its rows on one key left out where V's values are off the
// output's grid: what every comparison, the CPU's and the GPU's, measures with.
RoundingSteps rounding_steps_of(const AttentionProblem& problem);

// One row's sample in progress: the weighted sums of its elements' errors, in rounding steps.
// Host and device code alike (the CPU's comparison and the GPU's, oracle/row_check.h).
struct RowBiasSample {
  double outward = 0.0, upward = 0.0;  // weighted sums of the errors, in steps
  double weight = 0.0;
  double plain_outward = 0.0, plain_upward = 0.0;

  // One element: the float64 expected value, the kernel's (finite) value, the element's bound and
  // the plain reference's value (not finite: it counts as exact).
  ATTNFUZZ_HOST_DEVICE void add(const RoundingSteps& steps, double expected, double actual,
                                double allowed, double plain) {
    const double magnitude = ::fabs(expected);
    // Subnormal outputs round to an absolute step: no relative signing is meaningful there.
    if (!(magnitude >= steps.min_normal) || !is_finite(expected) || !is_finite(actual)) return;
    const double step = ::ldexp(steps.two_unit_roundoff, ::ilogb(expected));
    const double bound_steps = allowed / step > 1.0 ? allowed / step : 1.0;  // std::max(1, .)
    const double element_weight = 1.0 / (bound_steps * bound_steps);
    const double error_steps = (actual - expected) / step;
    upward += element_weight * error_steps;
    outward += element_weight * (expected > 0.0 ? error_steps : -error_steps);
    weight += element_weight;
    const double plain_steps = is_finite(plain) ? (plain - expected) / step : 0.0;
    plain_upward += element_weight * plain_steps;
    plain_outward += element_weight * (expected > 0.0 ? plain_steps : -plain_steps);
  }
};

// The test's sums over the rows sampled so far: each row's sample is its weighted mean error.
struct BiasSums {
  double outward = 0.0, outward_squares = 0.0;
  double upward = 0.0, upward_squares = 0.0;
  double plain_outward = 0.0, plain_upward = 0.0;
  std::int64_t rows = 0;

  // One row's sample (its weight > 0).
  ATTNFUZZ_HOST_DEVICE void add(const RowBiasSample& row) {
    const double row_outward = row.outward / row.weight;
    const double row_upward = row.upward / row.weight;
    outward += row_outward;
    outward_squares += row_outward * row_outward;
    upward += row_upward;
    upward_squares += row_upward * row_upward;
    plain_outward += row.plain_outward / row.weight;
    plain_upward += row.plain_upward / row.weight;
    ++rows;
  }

  // The samples of other rows.
  ATTNFUZZ_HOST_DEVICE void merge(const BiasSums& other) {
    outward += other.outward;
    outward_squares += other.outward_squares;
    upward += other.upward;
    upward_squares += other.upward_squares;
    plain_outward += other.plain_outward;
    plain_upward += other.plain_upward;
    rows += other.rows;
  }
};

// The test's result over the rows whose samples `sums` holds.
RoundingBias rounding_bias_of(const BiasSums& sums);

// Accumulates the samples row by row: begin_row, add for each element, end_row; or a whole row's
// sample at once (add_row).
class RoundingBiasTest {
 public:
  // `rows`: how many rows will be added at most, to size the set of rows seen once.
  explicit RoundingBiasTest(Dtype output_dtype, std::int64_t rows = 0);

  void begin_row();
  // One element: see RowBiasSample::add.
  void add(double expected, double actual, double allowed, double plain);
  // Ends the row; `row_fingerprint` identifies its expected outputs (rows with the same one
  // count once).
  void end_row(std::uint64_t row_fingerprint);
  // A row's sample, as begin_row, add for each element and end_row would have made it.
  void add_row(const RowBiasSample& row, std::uint64_t row_fingerprint);

  RoundingBias result() const;

 private:
  RoundingSteps steps_;
  RowBiasSample row_;  // the row in progress
  BiasSums sums_;      // over the rows so far
  FingerprintSet seen_rows_;
};

}  // namespace attnfuzz
