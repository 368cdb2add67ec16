// SPDX-License-Identifier: BSD-3-Clause
// The backward pass's bound (docs/tolerance.md, "The backward pass"). With u the dtype's unit
// roundoff, eta half its smallest subnormal, g(n) = gamma(n) of fp32, and per query row i:
//   e_i     = dS_i + 4 u32 (|s|_i + |bias|_i + |L_i| + 1)       exponent of P = exp(s - L)
//   eps_P,i = expm1(e_i)                                          P's relative error
//   eps_T,i = 0.77 g(D + 2) |s|_i / softcap + 2^-9 + 2 u32        1 - tanh^2's (soft-capped)
//   kappa_i = eps_P + (1 + eps_P)(1 + g(3))(1 + eps_T)(2 g(D + 1)(1 + u) + u + eps_T + g(3))
//   kappa'  = kappa + u (1 + kappa)                               dS rounded to the dtype
// |dS'_ij - dS_ij| <= kappa'_i w_ij + eta, and each gradient is an fp32 sum of n such terms:
//   dQ: E = (kappa'(1 + g) + g) dq_magnitude + eta (1 + g) scale sum_j |K_jd|, g = g(Sk + 2)
//   dK: the same with dk_magnitude, sum_i |Q_id|, g = g(rows of the group + 2), kappa' the
//       group's largest
//   dV: rho = eps_P + u (1 + eps_P) (P rounded), E = (rho (1 + g) + g) dv_magnitude
//       + eta (1 + g) sum_i |dO_id|
// Below fp32's normal range P = exp(s - L) may be off by 2^-126 (flushed): each dS by
// 2^-126 (2 G_i (1 + kappa) + 1) (P's error times dP - D, and the product's own), each P for dV by
// 2^-126; added to eta in the absolute terms above.
// dK and dV of a GQA group add each head's part rounded to the dtype: u (1 + E/magnitude) of the
// magnitude, and eta per head. Then allowed = E + u (|grad| + E) + eta, the final rounding.
#include "oracle/backward_tolerance.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/dtype.h"
#include "oracle/tolerance_terms.h"

namespace attnfuzz {
namespace {

double gamma(double terms) {
  const double nu = terms * kFloat32UnitRoundoff;
  return nu / (1.0 - nu);
}

// The largest |t''| of t(x) = 1 - tanh^2(x): 4 / (3 sqrt(3)) = 0.7698..., rounded up.
constexpr double kSoftcapSlopeChange = 0.77;

constexpr double kFloat32Largest = 0x1.fffffep127;
constexpr double kFloat32SmallestNormal = 0x1p-126;

}  // namespace

std::string_view gradient_tensor_name(GradientTensor tensor) {
  switch (tensor) {
    case GradientTensor::dq:
      return "dQ";
    case GradientTensor::dk:
      return "dK";
    case GradientTensor::dv:
      return "dV";
  }
  return "?";
}

BackwardBound::BackwardBound(const AttentionProblem& problem, const ReferenceAttention& forward,
                             const ReferenceGradients& gradients)
    : problem_(problem), gradients_(gradients) {
  const DtypeTraits& traits = traits_of(problem.dtype);
  unit_roundoff_ = traits.unit_roundoff();
  half_subnormal_ = traits.min_subnormal / 2.0;
  const double u = unit_roundoff_;
  const double u32 = kFloat32UnitRoundoff;
  const DeclaredNumerics fp32_accumulation;
  const ToleranceTerms terms(problem, fp32_accumulation);
  const auto dim = static_cast<double>(problem.head_dim);
  const double rows = static_cast<double>(forward.score_scale.size());
  probability_error_.assign(static_cast<std::size_t>(rows), 0.0);
  score_gradient_error_.assign(static_cast<std::size_t>(rows), 0.0);
  score_gradient_underflow_.assign(static_cast<std::size_t>(rows), 0.0);
  group_probability_error_.assign(static_cast<std::size_t>(problem.batch * problem.kv_heads), 0.0);
  group_score_gradient_error_.assign(group_probability_error_.size(), 0.0);
  group_score_gradient_underflow_.assign(group_probability_error_.size(), 0.0);
  const double product_gamma = gamma(3.0);
  const double sum_gamma = gamma(dim + 1.0);
  std::string why_out_of_range, why_spread;
  for (std::int64_t row = 0; row < static_cast<std::int64_t>(rows); ++row) {
    const double lse = forward.log_sum_exp[row];
    if (lse == -HUGE_VAL) continue;  // the row sees no key: P = 0 exactly
    if (!std::isfinite(lse)) {       // the float64 forward overflowed: nothing means anything
      if (in_range_) {
        why_out_of_range = "query row " + std::to_string(row % problem.seq_len_q) +
                           ": the float64 forward's log-sum-exp is not finite";
      }
      in_range_ = false;
      continue;
    }
    const double score_scale = forward.score_scale[row];
    const double bias_scale = forward.bias_scale[row];
    const double capped =
        problem.softcap > 0.0 ? std::min(problem.softcap, score_scale) : score_scale;
    const double exponent = terms.score_error(score_scale, bias_scale) +
                            4.0 * u32 * (capped + bias_scale + std::fabs(lse) + 1.0);
    const double probability_error = std::expm1(exponent);
    const double slope_error = problem.softcap > 0.0 ? kSoftcapSlopeChange * terms.score_gamma *
                                                               score_scale / problem.softcap +
                                                           2.0 * kSoftcapRelativeError + 2.0 * u32
                                                     : 0.0;
    const double kappa = probability_error +
                         (1.0 + probability_error) * (1.0 + product_gamma) * (1.0 + slope_error) *
                             (2.0 * sum_gamma * (1.0 + u) + u + slope_error + product_gamma);
    probability_error_[row] = probability_error;
    score_gradient_error_[row] = kappa;
    // fp32 below its normal range (a kernel may flush it to zero): P = exp(s - L) off by up to
    // 2^-126 whatever its size, which dP - D (at most 2 G_i, with its error) multiplies, and the
    // product dS itself by as much again.
    const double underflow =
        kFloat32SmallestNormal * (2.0 * gradients.gradient_scale[row] * (1.0 + kappa) + 1.0);
    score_gradient_underflow_[row] = underflow;
    const std::int64_t head = (row / problem.seq_len_q) % problem.heads;
    const std::int64_t batch = row / (problem.seq_len_q * problem.heads);
    const std::size_t group =
        static_cast<std::size_t>(batch * problem.kv_heads + head / problem.group_size());
    group_probability_error_[group] = std::max(group_probability_error_[group], probability_error);
    group_score_gradient_error_[group] = std::max(group_score_gradient_error_[group], kappa);
    group_score_gradient_underflow_[group] =
        std::max(group_score_gradient_underflow_[group], underflow);
    // Not below (rather than above): NaN, an overflowed oracle's, is out of range too.
    const double largest_score_gradient = gradients.largest_weight[row] * (1.0 + kappa) * (1.0 + u);
    const bool row_in_range = largest_score_gradient < traits.max_finite / 2.0 &&
                              gradients.gradient_scale[row] < kFloat32Largest / 4.0;
    if (!row_in_range && in_range_) {
      std::ostringstream why;
      why << "query row " << row % problem.seq_len_q << " of head " << head << ", batch " << batch
          << ": a kernel's dS may reach " << largest_score_gradient << " (and dO V^T "
          << gradients.gradient_scale[row] << "), past half of what " << traits.name
          << " holds: a correct kernel may overflow there";
      why_out_of_range = why.str();
      in_range_ = false;
    }
    if (!(kappa + u * (1.0 + kappa) <= 0.25) && why_spread.empty()) {
      std::ostringstream why;
      why << "query row " << row % problem.seq_len_q << " of head " << head << ", batch " << batch
          << ": its scores' rounding (up to " << exponent
          << " in an exponent) lets each dS move by " << kappa
          << " of its scale, more than 1/4: no gradient of it can be judged";
      why_spread = why.str();
    }
  }
  if (in_range_) why_out_of_range = first_magnitude_out_of_range(traits.max_finite / 2.0);
  in_range_ = why_out_of_range.empty();
  why_not_judgeable_ = in_range_ ? why_spread : why_out_of_range;
}

std::string BackwardBound::first_magnitude_out_of_range(double range) const {
  const struct {
    GradientTensor tensor;
    const LargeBuffer<double>& magnitude;
    const LargeBuffer<double>& gradient;
  } tensors[] = {{GradientTensor::dq, gradients_.dq_magnitude, gradients_.dq},
                 {GradientTensor::dk, gradients_.dk_magnitude, gradients_.dk},
                 {GradientTensor::dv, gradients_.dv_magnitude, gradients_.dv}};
  for (const auto& tensor : tensors) {
    for (std::size_t index = 0; index < tensor.magnitude.size(); ++index) {
      // Not below: NaN (an overflowed oracle) fails too.
      if (tensor.magnitude[index] < range && std::isfinite(tensor.gradient[index])) continue;
      return std::string(gradient_tensor_name(tensor.tensor)) + " element " +
             std::to_string(index) + " sums terms up to " +
             std::to_string(tensor.magnitude[index]) +
             ", past half of what the dtype holds: a correct kernel may overflow";
    }
  }
  return "";
}

double BackwardBound::allowed(GradientTensor tensor, std::int64_t index) const {
  const double u = unit_roundoff_;
  const double eta = half_subnormal_;
  const std::int64_t dim = problem_.head_dim;
  const std::int64_t row = index / dim;
  const std::int64_t d = index % dim;
  double gradient = 0.0, before_rounding = 0.0;
  if (tensor == GradientTensor::dq) {
    const std::int64_t batch = row / (problem_.seq_len_q * problem_.heads);
    const std::int64_t kv_head =
        (row / problem_.seq_len_q) % problem_.heads / problem_.group_size();
    const double kappa = score_gradient_error_[row];
    const double rounded = kappa + u * (1.0 + kappa);
    const double g = gamma(static_cast<double>(problem_.seq_len_k_of(batch)) + 2.0);
    gradient = gradients_.dq[index];
    before_rounding = (rounded * (1.0 + g) + g) * gradients_.dq_magnitude[index] +
                      (eta + score_gradient_underflow_[row]) * (1.0 + g) * problem_.softmax_scale *
                          gradients_.key_abs_sum[(batch * problem_.kv_heads + kv_head) * dim + d];
  } else {
    const std::int64_t group = row / problem_.seq_len_k;  // batch * kv_heads + kv_head
    const std::int64_t batch = group / problem_.kv_heads;
    const double terms =
        static_cast<double>(problem_.seq_len_q_of(batch) * problem_.group_size()) + 2.0;
    const double g = gamma(terms);
    double relative = 0.0, magnitude = 0.0, absolute = 0.0;
    if (tensor == GradientTensor::dk) {
      const double kappa = group_score_gradient_error_[group];
      relative = kappa + u * (1.0 + kappa);
      magnitude = gradients_.dk_magnitude[index];
      absolute = (eta + group_score_gradient_underflow_[group]) * problem_.softmax_scale *
                 gradients_.query_abs_sum[group * dim + d];
      gradient = gradients_.dk[index];
    } else {
      const double probability_error = group_probability_error_[group];
      relative = probability_error + u * (1.0 + probability_error);
      magnitude = gradients_.dv_magnitude[index];
      absolute = (eta + kFloat32SmallestNormal) * gradients_.grad_output_abs_sum[group * dim + d];
      gradient = gradients_.dv[index];
    }
    const double summed = (relative * (1.0 + g) + g) * magnitude + (1.0 + g) * absolute;
    before_rounding = summed;
    if (problem_.group_size() > 1) {  // each head's part rounded before the group's sum
      before_rounding +=
          u * (magnitude + summed) + eta * static_cast<double>(problem_.group_size());
    }
  }
  return before_rounding + u * (std::fabs(gradient) + before_rounding) + eta;
}

}  // namespace attnfuzz
