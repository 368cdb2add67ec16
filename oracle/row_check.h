// SPDX-License-Identifier: BSD-3-Clause
// One query row of a kernel's output against the float64 reference: every element's bound and
// verdict, the row's error figures and its bias sample. The CPU's comparison calls it row by row;
// the GPU's (oracle/device_comparison.cu) runs it in one thread per row over the same arrays in
// device memory. Both then reduce the rows in the same order with the same code
// (tolerance.cpp's ComparisonBuilder), so a case gets the same verdict, first failing element and
// figures wherever it was compared.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "core/portable_math.h"
#include "core/splitmix.h"
#include "oracle/rounding_bias.h"
#include "oracle/tolerance_terms.h"

namespace attnfuzz {

// What is wrong with one output element.
enum class ElementFault : std::uint8_t { none, unwritten, nonfinite, beyond_bound };

// The arrays of one row: the reference's (compact, head_dim long; value_abs_sum for the row's kv
// head), the kernel's output row and the plain reference's (compact; null: none).
struct RowArrays {
  const double* expected;
  const double* magnitude;
  const double* value_abs_sum;
  double inverse_row_sum, score_scale, bias_scale;
  const std::uint16_t* output;
  const float* plain;
  std::uint64_t fingerprint_seed;  // the row's kv head: rows of different kv heads never merge
};

// One element as a report names it (the row's indices are the caller's).
struct RowElement {
  std::int32_t dim = -1;  // -1: none
  ElementFault fault = ElementFault::none;
  double expected = 0.0, actual = 0.0, allowed = 0.0, ratio = 0.0;
};

// Everything a comparison needs from one row.
struct RowCheck {
  std::int32_t elements = 0;   // elements judged (those with a finite reference and bound)
  std::int32_t failing = 0;    // unwritten, non-finite or beyond the bound
  std::int32_t nonfinite = 0;  // judged elements whose value is not finite (unwritten included)
  bool judgeable = true;       // the bound pins the row (kMaxProbabilitySpread), the oracle held
  bool oracle_overflowed = false;
  double spread = 0.0;  // how far the bound lets the row's probabilities move
  RowElement first_failure;
  RowElement worst;  // the largest |error| / allowed, the first of equals; dim -1: none judged
  double max_abs_error = 0.0, abs_error_sum = 0.0, max_rel_error = 0.0;  // over finite elements
  double plain_max_error = 0.0;  // |plain - expected|, infinite where plain is not
  // Mean and centred sums over the row's head_dim values, for the correlation: the kernel's value
  // where it was judged, the reference's where it was not.
  double mean_expected = 0.0, mean_actual = 0.0;
  double squares_expected = 0.0, squares_actual = 0.0, co_moment = 0.0;
  RowBiasSample bias;
  std::uint64_t fingerprint = 0;  // of the row's expected values
};

// `widen(bits)`: an output pattern's value as a float. `relative_floor`: relative errors count
// only where |expected| reaches it.
template <typename Widen>
ATTNFUZZ_HOST_DEVICE RowCheck check_row(const RowArrays& row, std::int64_t head_dim,
                                        const ToleranceTerms& terms, const RoundingSteps& steps,
                                        std::uint16_t poison, double relative_floor, Widen widen) {
  RowCheck check;
  const double score_error = terms.score_error(row.score_scale, row.bias_scale);
  check.spread = terms.probability_spread(score_error);
  check.judgeable = check.spread <= kMaxProbabilitySpread && terms.accumulation_judgeable();
  check.fingerprint = row.fingerprint_seed;
  const double infinity = static_cast<double>(INFINITY);
  const bool samples_bias = !steps.sits_on_one_key(row.inverse_row_sum);
  for (std::int64_t d = 0; d < head_dim; ++d) {
    const double expected = row.expected[d];
    const std::uint16_t bits = row.output[d];
    const double actual = widen(bits);
    const double allowed = terms.allowed(expected, row.magnitude[d], row.inverse_row_sum,
                                         score_error, row.value_abs_sum[d]);
    check.fingerprint = splitmix64_finalise(check.fingerprint ^ portable::bits_of(expected));
    if (row.plain != nullptr) {
      const double plain_error = ::fabs(static_cast<double>(row.plain[d]) - expected);
      check.plain_max_error = !is_finite(plain_error)               ? infinity
                              : plain_error > check.plain_max_error ? plain_error
                                                                    : check.plain_max_error;
    }
    double compared = expected;  // the value the correlation sees
    if (!is_finite(expected) || !is_finite(allowed)) {
      check.judgeable = false;  // nothing to compare with, or no bound to compare against
      check.oracle_overflowed = check.oracle_overflowed || !is_finite(expected);
    } else {
      compared = actual;
      RowElement element{
          static_cast<std::int32_t>(d), ElementFault::none, expected, actual, allowed, infinity};
      if (bits == poison) {
        element.fault = ElementFault::unwritten;
      } else if (!is_finite(actual)) {
        element.fault = ElementFault::nonfinite;
      } else {
        const double error = ::fabs(actual - expected);
        element.ratio = error / allowed;
        if (element.ratio > 1.0) element.fault = ElementFault::beyond_bound;
        if (error > check.max_abs_error) check.max_abs_error = error;
        check.abs_error_sum += error;
        if (::fabs(expected) >= relative_floor && expected != 0.0 &&
            error / ::fabs(expected) > check.max_rel_error) {
          check.max_rel_error = error / ::fabs(expected);
        }
      }
      if (element.fault != ElementFault::none) {
        if (check.failing++ == 0) check.first_failure = element;
      } else if (samples_bias) {
        check.bias.add(steps, expected, actual, allowed,
                       row.plain != nullptr ? static_cast<double>(row.plain[d]) : expected);
      }
      if (!is_finite(actual)) ++check.nonfinite;
      if (element.ratio > check.worst.ratio || check.elements == 0) check.worst = element;
      ++check.elements;
    }
    // Welford's update of the means and centred sums.
    const double count = static_cast<double>(d + 1);
    const double delta_expected = expected - check.mean_expected;
    const double delta_actual = compared - check.mean_actual;
    check.mean_expected += delta_expected / count;
    check.mean_actual += delta_actual / count;
    check.squares_expected += delta_expected * (expected - check.mean_expected);
    check.squares_actual += delta_actual * (compared - check.mean_actual);
    check.co_moment += delta_expected * (compared - check.mean_actual);
  }
  return check;
}

}  // namespace attnfuzz
