// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/rounding_bias.h"

#include <algorithm>
#include <cmath>

namespace attnfuzz {
namespace {

// Z and M of one signing: 0 where no row has a non-zero sample.
void summarize(double sum, double squares, std::int64_t rows, double& z, double& steps) {
  z = squares > 0.0 ? sum / std::sqrt(squares) : 0.0;
  steps = rows > 0 ? sum / static_cast<double>(rows) : 0.0;
}

}  // namespace

double bias_closeness(double z, double steps, double plain_steps) {
  return std::min({std::fabs(z) / kBiasZLimit, std::fabs(steps) / kBiasMinSteps,
                   std::fabs(steps - plain_steps) / kBiasMinSteps});
}

RoundingBiasTest::RoundingBiasTest(Dtype output_dtype) {
  const DtypeTraits& traits = traits_of(output_dtype);
  two_unit_roundoff_ = 2.0 * traits.unit_roundoff();
  min_normal_ = std::ldexp(traits.min_subnormal, traits.significand_bits - 1);
}

void RoundingBiasTest::begin_row() {
  row_outward_ = 0.0;
  row_upward_ = 0.0;
  row_weight_ = 0.0;
  row_plain_outward_ = 0.0;
  row_plain_upward_ = 0.0;
}

void RoundingBiasTest::add(double expected, double actual, double allowed, double plain) {
  const double magnitude = std::fabs(expected);
  // Subnormal outputs round to an absolute step: no relative signing is meaningful there.
  if (!(magnitude >= min_normal_) || !std::isfinite(expected) || !std::isfinite(actual)) return;
  const double step = std::ldexp(two_unit_roundoff_, std::ilogb(expected));
  const double bound_steps = std::max(1.0, allowed / step);
  const double weight = 1.0 / (bound_steps * bound_steps);
  const double error_steps = (actual - expected) / step;
  row_upward_ += weight * error_steps;
  row_outward_ += weight * (expected > 0.0 ? error_steps : -error_steps);
  row_weight_ += weight;
  const double plain_steps = std::isfinite(plain) ? (plain - expected) / step : 0.0;
  row_plain_upward_ += weight * plain_steps;
  row_plain_outward_ += weight * (expected > 0.0 ? plain_steps : -plain_steps);
}

void RoundingBiasTest::end_row(std::uint64_t row_fingerprint) {
  if (!(row_weight_ > 0.0) || !seen_rows_.insert(row_fingerprint).second) return;
  const double outward = row_outward_ / row_weight_;
  const double upward = row_upward_ / row_weight_;
  outward_sum_ += outward;
  outward_squares_ += outward * outward;
  upward_sum_ += upward;
  upward_squares_ += upward * upward;
  plain_outward_sum_ += row_plain_outward_ / row_weight_;
  plain_upward_sum_ += row_plain_upward_ / row_weight_;
  ++rows_;
}

RoundingBias RoundingBiasTest::result() const {
  RoundingBias bias;
  bias.rows = rows_;
  summarize(outward_sum_, outward_squares_, rows_, bias.outward_z, bias.outward_steps);
  summarize(upward_sum_, upward_squares_, rows_, bias.upward_z, bias.upward_steps);
  if (rows_ > 0) {
    bias.plain_outward_steps = plain_outward_sum_ / static_cast<double>(rows_);
    bias.plain_upward_steps = plain_upward_sum_ / static_cast<double>(rows_);
  }
  bias.ratio =
      std::max(bias_closeness(bias.outward_z, bias.outward_steps, bias.plain_outward_steps),
               bias_closeness(bias.upward_z, bias.upward_steps, bias.plain_upward_steps));
  bias.leans = bias.ratio > 1.0;
  return bias;
}

}  // namespace attnfuzz
