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

RoundingSteps::RoundingSteps(Dtype output_dtype, bool values_off_grid) {
  const DtypeTraits& traits = traits_of(output_dtype);
  two_unit_roundoff = 2.0 * traits.unit_roundoff();
  min_normal = std::ldexp(traits.min_subnormal, traits.significand_bits - 1);
  one_key_gap = values_off_grid ? 16.0 * traits.unit_roundoff() : 0.0;
}

RoundingSteps rounding_steps_of(const AttentionProblem& problem) {
  return RoundingSteps(problem.dtype, problem.descaled(problem.v_storage));
}

RoundingBiasTest::RoundingBiasTest(Dtype output_dtype, std::int64_t rows) : steps_(output_dtype) {
  if (rows > 0) seen_rows_.reserve(static_cast<std::size_t>(rows));
}

void RoundingBiasTest::begin_row() {
  row_ = RowBiasSample{};
}

void RoundingBiasTest::add(double expected, double actual, double allowed, double plain) {
  row_.add(steps_, expected, actual, allowed, plain);
}

void RoundingBiasTest::end_row(std::uint64_t row_fingerprint) {
  add_row(row_, row_fingerprint);
}

void RoundingBiasTest::add_row(const RowBiasSample& row, std::uint64_t row_fingerprint) {
  if (!(row.weight > 0.0) || !seen_rows_.insert(row_fingerprint)) return;
  sums_.add(row);
}

RoundingBias RoundingBiasTest::result() const {
  return rounding_bias_of(sums_);
}

RoundingBias rounding_bias_of(const BiasSums& sums) {
  RoundingBias bias;
  bias.rows = sums.rows;
  summarize(sums.outward, sums.outward_squares, sums.rows, bias.outward_z, bias.outward_steps);
  summarize(sums.upward, sums.upward_squares, sums.rows, bias.upward_z, bias.upward_steps);
  if (sums.rows > 0) {
    bias.plain_outward_steps = sums.plain_outward / static_cast<double>(sums.rows);
    bias.plain_upward_steps = sums.plain_upward / static_cast<double>(sums.rows);
  }
  bias.ratio =
      std::max(bias_closeness(bias.outward_z, bias.outward_steps, bias.plain_outward_steps),
               bias_closeness(bias.upward_z, bias.upward_steps, bias.plain_upward_steps));
  bias.leans = bias.ratio > 1.0;
  return bias;
}

}  // namespace attnfuzz
