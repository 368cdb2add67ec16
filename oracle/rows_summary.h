// SPDX-License-Identifier: BSD-3-Clause
// The rows' checks (oracle/row_check.h) of a comparison gathered into what its verdict needs:
// counts, maxima, sums, the moments of the correlation, the bias test's sums, and which rows hold
// the first failure, the worst element and the first inconclusive row. The CPU's comparison adds
// the rows one by one in (b, h, i) order; the GPU's (oracle/device_comparison.cu) folds runs of
// consecutive rows and merges the runs' summaries in that order, so only the summary and the rows
// it names come back to the host. Counts, maxima and the rows named are the same either way; the
// sums differ only in the order they were added.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"
#include "oracle/rounding_bias.h"
#include "oracle/row_check.h"

namespace attnfuzz {

struct RowsSummary {
  std::int64_t elements = 0, failing = 0, nonfinite = 0, inconclusive_rows = 0;
  // Rows by their index in the problem's compact (b, h, i) order; -1: none.
  std::int64_t first_failing_row = -1;       // the first row with a failing element
  std::int64_t worst_row = -1;               // the first row holding the largest error / bound
  std::int64_t first_inconclusive_row = -1;  // the first row that could not be judged
  double worst_ratio = 0.0;
  double max_abs_error = 0.0, max_rel_error = 0.0, abs_error_sum = 0.0;
  double plain_max_error = 0.0;  // infinite once any row's is
  // The correlation's moments over every row's head_dim values (row_check.h): their count, means
  // and centred sums.
  double values = 0.0, mean_expected = 0.0, mean_actual = 0.0;
  double squares_expected = 0.0, squares_actual = 0.0, co_moment = 0.0;
  BiasSums bias;

  // Row `index`, after every row added so far. `bias_sample`: whether the row is one of the bias
  // test's samples (judged, with weight, the first row of its expected values).
  ATTNFUZZ_HOST_DEVICE void add(std::int64_t index, const RowCheck& row, double head_dim,
                                bool bias_sample) {
    if (row.failing > 0 && first_failing_row < 0) first_failing_row = index;
    if (row.worst.dim >= 0 && (worst_row < 0 || row.worst.ratio > worst_ratio)) {
      worst_row = index;
      worst_ratio = row.worst.ratio;
    }
    elements += row.elements;
    failing += row.failing;
    nonfinite += row.nonfinite;
    join_maxima(row.max_abs_error, row.max_rel_error, row.plain_max_error);
    abs_error_sum += row.abs_error_sum;
    join_moments(head_dim, row.mean_expected, row.mean_actual, row.squares_expected,
                 row.squares_actual, row.co_moment);
    if (!row.judgeable) {
      if (inconclusive_rows++ == 0) first_inconclusive_row = index;
    } else if (bias_sample) {
      bias.add(row.bias);
    }
  }

  // The rows of `later`, which all come after this summary's.
  ATTNFUZZ_HOST_DEVICE void merge(const RowsSummary& later) {
    if (first_failing_row < 0) first_failing_row = later.first_failing_row;
    if (later.worst_row >= 0 && (worst_row < 0 || later.worst_ratio > worst_ratio)) {
      worst_row = later.worst_row;
      worst_ratio = later.worst_ratio;
    }
    if (first_inconclusive_row < 0) first_inconclusive_row = later.first_inconclusive_row;
    elements += later.elements;
    failing += later.failing;
    nonfinite += later.nonfinite;
    inconclusive_rows += later.inconclusive_rows;
    join_maxima(later.max_abs_error, later.max_rel_error, later.plain_max_error);
    abs_error_sum += later.abs_error_sum;
    join_moments(later.values, later.mean_expected, later.mean_actual, later.squares_expected,
                 later.squares_actual, later.co_moment);
    bias.merge(later.bias);
  }

 private:
  ATTNFUZZ_HOST_DEVICE static double larger(double a, double b) { return a < b ? b : a; }

  ATTNFUZZ_HOST_DEVICE void join_maxima(double abs_error, double rel_error, double plain_error) {
    max_abs_error = larger(max_abs_error, abs_error);
    max_rel_error = larger(max_rel_error, rel_error);
    plain_max_error = !is_finite(plain_max_error) || !is_finite(plain_error)
                          ? static_cast<double>(INFINITY)
                          : larger(plain_max_error, plain_error);
  }

  // Chan, Golub and LeVeque's pairwise update: `count` values with these means and centred sums
  // joined to those so far.
  ATTNFUZZ_HOST_DEVICE void join_moments(double count, double other_mean_expected,
                                         double other_mean_actual, double other_squares_expected,
                                         double other_squares_actual, double other_co_moment) {
    if (!(count > 0.0)) return;
    const double before = values, total = values + count;
    const double delta_expected = other_mean_expected - mean_expected;
    const double delta_actual = other_mean_actual - mean_actual;
    const double weight = before * count / total;
    squares_expected += other_squares_expected + delta_expected * delta_expected * weight;
    squares_actual += other_squares_actual + delta_actual * delta_actual * weight;
    co_moment += other_co_moment + delta_expected * delta_actual * weight;
    mean_expected += delta_expected * count / total;
    mean_actual += delta_actual * count / total;
    values = total;
  }
};

// The checks of the rows a summary names (a row it names as -1 is left default).
struct NamedRowChecks {
  RowCheck first_failing, worst, first_inconclusive;
};

}  // namespace attnfuzz
