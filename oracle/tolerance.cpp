// The tolerance model (derivation in docs/tolerance.md). For output element (b, h, i, d), with
// p_ij the exact softmax probabilities, l_i = sum_j exp(s_ij - max_j s_ij), A_id = sum_j p_ij
// |V_jd| and Vsum_d = sum_j |V_jd|, a kernel with fp16/bf16 inputs and fp32 accumulation that
// rounds P to the input dtype once may be off by at most
//
//   E   = (2 u + 2 dS_i + 2 gamma(Sk) + (2 Sk + 10) u32) A_id          rounding of P, fp32 work
//       + (eta (Vsum_d + Sk |O_id|) + u32 / e * Vsum_d) / l_i          P below the normal range
//   allowed = E + u (|O_id| + E) + eta                                 rounding of the output
//
// u: the dtype's unit roundoff; eta: half its smallest subnormal; u32 = 2^-24;
// gamma(n) = n u32 / (1 - n u32); dS_i = gamma(D + 2) * scale * |Q_i| max_j |K_j|, the fp32 error
// bound of a score.
#include "oracle/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

namespace attnfuzz {
namespace {

double gamma32(double n) {
  const double nu = n * kFloat32UnitRoundoff;
  return nu / (1.0 - nu);
}

struct ToleranceTerms {
  double unit_roundoff;          // u of the input/output dtype
  double half_subnormal;         // eta
  double magnitude_factor_base;  // 2u + 2 gamma(Sk) + (2 Sk + 10) u32
  double score_gamma;            // gamma(D + 2)
  double seq_len_k;

  explicit ToleranceTerms(const AttentionProblem& problem) {
    const DtypeTraits& traits = traits_of(problem.dtype);
    const double seq_k = static_cast<double>(problem.seq_len_k);
    unit_roundoff = traits.unit_roundoff();
    half_subnormal = traits.min_subnormal / 2.0;
    magnitude_factor_base =
        2.0 * unit_roundoff + 2.0 * gamma32(seq_k) + (2.0 * seq_k + 10.0) * kFloat32UnitRoundoff;
    score_gamma = gamma32(static_cast<double>(problem.head_dim) + 2.0);
    seq_len_k = seq_k;
  }

  double allowed(double expected, double magnitude, double inverse_row_sum, double score_scale,
                 double value_abs_sum) const {
    const double score_error = score_gamma * score_scale;
    const double before_rounding =
        (magnitude_factor_base + 2.0 * score_error) * magnitude +
        (half_subnormal * (value_abs_sum + seq_len_k * std::fabs(expected)) +
         kFloat32UnitRoundoff / std::numbers::e * value_abs_sum) *
            inverse_row_sum;
    return before_rounding + unit_roundoff * (std::fabs(expected) + before_rounding) +
           half_subnormal;
  }
};

std::int64_t compact_index(const AttentionProblem& problem, std::int64_t b, std::int64_t h,
                           std::int64_t i, std::int64_t d) {
  return ((b * problem.heads + h) * problem.seq_len_q + i) * problem.head_dim + d;
}

std::string describe_element(const ElementReport& element) {
  std::ostringstream text;
  text.precision(6);
  text << "element (b=" << element.batch << ", h=" << element.head << ", i=" << element.row
       << ", d=" << element.dim << ")";
  switch (element.fault) {
    case ElementFault::unwritten:
      text << " was never written (still holds the poison pattern); expected " << element.expected;
      break;
    case ElementFault::nonfinite:
      text << " is " << element.actual << " where the reference is " << element.expected;
      break;
    default:
      text << ": expected " << element.expected << ", got " << element.actual << ", error "
           << std::fabs(element.actual - element.expected) << " > allowed " << element.allowed;
      break;
  }
  return text.str();
}

}  // namespace

std::string_view element_fault_name(ElementFault fault) {
  constexpr std::string_view names[] = {"none", "unwritten", "nonfinite", "beyond_bound"};
  return names[static_cast<int>(fault)];
}

double allowed_error(const AttentionProblem& problem, const ReferenceAttention& reference,
                     std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim) {
  const ToleranceTerms terms(problem);
  const std::int64_t index = compact_index(problem, batch, head, row, dim);
  const std::int64_t row_index = index / problem.head_dim;
  const std::int64_t kv_head = head / problem.group_size();
  return terms.allowed(
      reference.output[index], reference.magnitude[index], reference.inverse_row_sum[row_index],
      reference.score_scale[row_index],
      reference.value_abs_sum[(batch * problem.kv_heads + kv_head) * problem.head_dim + dim]);
}

OracleFreeBound::OracleFreeBound(const AttentionProblem& problem, const AttentionTensors& inputs)
    : problem_(problem) {
  const std::span<const float> widen = widening_table(problem.dtype);
  const std::int64_t dim = problem.head_dim;
  auto norm = [&](const std::uint16_t* row) {
    double sum = 0.0;
    for (std::int64_t d = 0; d < dim; ++d)
      sum += static_cast<double>(widen[row[d]]) * widen[row[d]];
    return std::sqrt(sum);
  };
  value_abs_max_.assign(static_cast<std::size_t>(problem.batch * problem.kv_heads * dim), 0.0);
  value_abs_sum_ = value_abs_max_;
  std::vector<double> max_key_norm(static_cast<std::size_t>(problem.batch * problem.kv_heads), 0.0);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
      const std::int64_t slot = b * problem.kv_heads + kv;
      for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
        const std::uint16_t* k_row = inputs.k + b * problem.k_strides.batch +
                                     j * problem.k_strides.seq + kv * problem.k_strides.head;
        const std::uint16_t* v_row = inputs.v + b * problem.v_strides.batch +
                                     j * problem.v_strides.seq + kv * problem.v_strides.head;
        max_key_norm[slot] = std::max(max_key_norm[slot], norm(k_row));
        for (std::int64_t d = 0; d < dim; ++d) {
          const double magnitude = std::fabs(widen[v_row[d]]);
          value_abs_max_[slot * dim + d] = std::max(value_abs_max_[slot * dim + d], magnitude);
          value_abs_sum_[slot * dim + d] += magnitude;
        }
      }
    }
  }
  score_scale_.resize(static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q));
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const double key_norm = max_key_norm[b * problem.kv_heads + h / problem.group_size()];
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        const std::uint16_t* q_row = inputs.q + b * problem.q_strides.batch +
                                     i * problem.q_strides.seq + h * problem.q_strides.head;
        score_scale_[(b * problem.heads + h) * problem.seq_len_q + i] =
            problem.softmax_scale * norm(q_row) * key_norm;
      }
    }
  }
}

double OracleFreeBound::allowed(std::int64_t batch, std::int64_t head, std::int64_t row,
                                std::int64_t dim, double output_magnitude) const {
  const ToleranceTerms terms(problem_);
  const std::int64_t slot =
      (batch * problem_.kv_heads + head / problem_.group_size()) * problem_.head_dim + dim;
  if (problem_.last_visible_key(row) < 0) return terms.half_subnormal;  // must be exactly 0
  return terms.allowed(output_magnitude, value_abs_max_[slot], 1.0,
                       score_scale_[(batch * problem_.heads + head) * problem_.seq_len_q + row],
                       value_abs_sum_[slot]);
}

Comparison compare_to_reference(const AttentionProblem& problem,
                                const ReferenceAttention& reference,
                                const std::vector<float>& plain, const std::uint16_t* output) {
  const ToleranceTerms terms(problem);
  const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
  const std::span<const float> widen = widening_table(problem.dtype);
  const std::int64_t dim = problem.head_dim;

  Comparison result;
  double max_expected = 0.0;
  double expected_sum = 0.0;
  for (double value : reference.output) {
    max_expected = std::max(max_expected, std::fabs(value));
    expected_sum += value;
  }
  const double relative_floor = terms.unit_roundoff * max_expected;

  double abs_error_sum = 0.0, actual_sum = 0.0;
  std::int64_t nonfinite = 0;
  std::vector<double> actual_values(reference.output.size());
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv_head = h / problem.group_size();
      const double* value_abs_sum =
          &reference.value_abs_sum[(b * problem.kv_heads + kv_head) * dim];
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        const std::uint16_t* out_row = output + b * problem.o_strides.batch +
                                       i * problem.o_strides.seq + h * problem.o_strides.head;
        for (std::int64_t d = 0; d < dim; ++d) {
          const std::int64_t index = row_index * dim + d;
          const double expected = reference.output[index];
          const double actual = widen[out_row[d]];
          actual_values[index] = actual;
          const double allowed = terms.allowed(expected, reference.magnitude[index],
                                               reference.inverse_row_sum[row_index],
                                               reference.score_scale[row_index], value_abs_sum[d]);
          ElementReport element{b, h, i, d, expected, actual, allowed, ElementFault::none};
          double ratio;
          if (out_row[d] == poison) {
            element.fault = ElementFault::unwritten;
            ratio = std::numeric_limits<double>::infinity();
          } else if (!std::isfinite(actual)) {
            element.fault = ElementFault::nonfinite;
            ratio = std::numeric_limits<double>::infinity();
          } else {
            const double error = std::fabs(actual - expected);
            ratio = error / allowed;
            if (ratio > 1.0) element.fault = ElementFault::beyond_bound;
            result.max_abs_error = std::max(result.max_abs_error, error);
            abs_error_sum += error;
            actual_sum += actual;
            if (std::fabs(expected) >= relative_floor && expected != 0.0) {
              result.max_rel_error = std::max(result.max_rel_error, error / std::fabs(expected));
            }
          }
          if (element.fault != ElementFault::none) {
            ++result.failing_elements;
            if (!result.first_failure) result.first_failure = element;
          }
          if (!std::isfinite(actual)) ++nonfinite;
          if (ratio > result.bound_ratio || result.elements == 0) {
            result.bound_ratio = ratio;
            result.worst_element = element;
          }
          ++result.elements;
        }
      }
    }
  }

  const double count = static_cast<double>(std::max<std::int64_t>(result.elements, 1));
  result.mean_abs_error =
      nonfinite ? std::numeric_limits<double>::quiet_NaN() : abs_error_sum / count;
  if (nonfinite) {
    result.max_abs_error = std::numeric_limits<double>::infinity();
    result.correlation = std::numeric_limits<double>::quiet_NaN();
  } else {
    const double expected_mean = expected_sum / count, actual_mean = actual_sum / count;
    double covariance = 0.0, expected_var = 0.0, actual_var = 0.0;
    for (std::size_t index = 0; index < actual_values.size(); ++index) {
      const double de = reference.output[index] - expected_mean;
      const double da = actual_values[index] - actual_mean;
      covariance += de * da;
      expected_var += de * de;
      actual_var += da * da;
    }
    result.correlation = (expected_var > 0.0 && actual_var > 0.0)
                             ? covariance / std::sqrt(expected_var * actual_var)
                             : (expected_var == actual_var ? 1.0 : 0.0);
  }

  // FlashAttention's rule: max error <= 2 * (plain same-precision max error) + atol, where atol
  // is one output rounding of the largest reference value.
  // A plain implementation that overflowed (its scores rounded to fp16 became inf) cannot judge:
  // its error counts as infinite, which leaves the case to the per-element bound.
  for (std::size_t index = 0; index < plain.size(); ++index) {
    const double plain_error = std::fabs(plain[index] - reference.output[index]);
    result.plain_max_abs_error = std::isfinite(plain_error)
                                     ? std::max(result.plain_max_abs_error, plain_error)
                                     : std::numeric_limits<double>::infinity();
    if (!std::isfinite(plain_error)) break;
  }
  result.fa_rule_atol = terms.unit_roundoff * max_expected;
  const double fa_limit = 2.0 * result.plain_max_abs_error + result.fa_rule_atol;
  result.fa_rule_ratio = fa_limit > 0.0               ? result.max_abs_error / fa_limit
                         : result.max_abs_error > 0.0 ? std::numeric_limits<double>::infinity()
                                                      : 0.0;
  result.error_ratio = std::max(result.bound_ratio, result.fa_rule_ratio);

  result.passed = result.failing_elements == 0 && result.fa_rule_ratio <= 1.0;
  if (result.first_failure) {
    std::ostringstream reason;
    reason << describe_element(*result.first_failure) << "; " << result.failing_elements << " of "
           << result.elements << " elements fail";
    result.reason = reason.str();
  } else if (!result.passed) {
    std::ostringstream reason;
    reason.precision(6);
    reason << "FlashAttention rule: max error " << result.max_abs_error << " > 2 x plain "
           << dtype_name(problem.dtype) << " error " << result.plain_max_abs_error << " + "
           << result.fa_rule_atol << "; worst " << describe_element(result.worst_element);
    result.reason = reason.str();
  }
  return result;
}

}  // namespace attnfuzz
