// SPDX-License-Identifier: BSD-3-Clause
// The tolerance model (derivation in docs/tolerance.md). For output element (b, h, i, d), with
// p_ij the exact softmax probabilities, l_i = sum_j exp(s_ij - max_j s_ij), A_id = sum_j p_ij
// |V_jd| and Vsum_d = sum_j |V_jd|, a kernel with fp16/bf16 inputs and fp32 accumulation that
// rounds P to the input dtype once may be off by at most
//
//   E   = (2 u + 2 dS_i + 2 gamma(Sk) + (2 Sk + 10) u32) A_id          rounding of P, fp32 work
//       + (eta (Vsum_d + Sk |O_id|) + u32 / e * Vsum_d + Sk eta_a) / l_i  P below the normal range
//   allowed = E + u (|O_id| + E) + eta                                 rounding of the output
//
// u: the dtype's unit roundoff; eta: half its smallest subnormal; u32 = 2^-24; eta_a: half the
// P V accumulator's smallest subnormal; gamma(n) = n u32 / (1 - n u32). A kernel that declares an
// accumulator of another dtype (unit roundoff u_a), rounded at most twice per k keys summed in fp32
// (oracle/declared_numerics.h), has 2 gamma(k) + 2 gamma_a(2 ceil(Sk / k)) in place of 2 gamma(Sk);
// one that declares P rounded to another dtype (--probabilities), that dtype's u and eta in P's
// terms (2 u and eta (Vsum_d + Sk |O_id|)).
// dS_i = gamma(D + 2) * scale * |Q_i| max_j |K_j|, the fp32 error
// bound of a score (gamma(D + 4) when fp8 inputs' descale factors multiply the scale; V's factor
// adds u32 A_id to the first line). A kernel that declares fp8 inputs dequantized into a 16-bit
// dtype D (--dequantize-to) rounds each element of an fp8 tensor once more (u_D relative, eta_D
// absolute): for Q and K, (1 + gamma)(1 + u_D) per such tensor in place of 1 + gamma, on norms
// padded by sqrt(D) eta_D / u_D (DeclaredNumerics::dequantization_norm_padding); for V, a factor
// 1 + u_D on the first line's relative terms and eta_D added. The score term is exact rather than
// first order: exponents each off by at most dS_i move a probability by a factor within exp(+-2
// dS_i), so the first line's 2 dS_i is (exp(2 dS_i) - 1)(1 + the rest), which is what keeps the
// bound an upper bound for large scores.
#include "oracle/tolerance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>
#include <stdexcept>

#include "core/splitmix.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

// gamma(n) = n u / (1 - n u): the relative error bound of n roundings of unit roundoff u; infinite
// once n u reaches 1 (no bound then).
double gamma(double n, double unit_roundoff) {
  const double nu = n * unit_roundoff;
  return nu < 1.0 ? nu / (1.0 - nu) : std::numeric_limits<double>::infinity();
}

}  // namespace

ToleranceTerms::ToleranceTerms(const AttentionProblem& problem, const DeclaredNumerics& numerics) {
  const DtypeTraits& traits = traits_of(problem.dtype);
  const double seq_k = static_cast<double>(problem.seq_len_k);
  unit_roundoff = traits.unit_roundoff();
  half_subnormal = traits.min_subnormal / 2.0;
  // Terms 2 and 3 are P's rounding: in the dtype the kernel declares for P (--probabilities), the
  // output's by default.
  const DtypeTraits& probability_traits = traits_of(numerics.probability_dtype(problem));
  probability_unit_roundoff = probability_traits.unit_roundoff();
  probability_half_subnormal = probability_traits.min_subnormal / 2.0;
  if (numerics.accumulation_declared()) {
    // Blocks of k keys summed in fp32 (gamma32(k) each, numerator and row sum), the accumulator
    // rounded at most twice per block (2 gamma_a(2 ceil(Sk / k))), exp and the final division
    // in fp32 as ever ((2 Sk + 10) u32).
    const double keys = static_cast<double>(numerics.keys_per_rounding);
    const double roundings = 2.0 * std::ceil(seq_k / keys);
    accumulation_spread =
        2.0 * gamma(std::min(keys, seq_k), kFloat32UnitRoundoff) +
        2.0 * gamma(roundings, numerics.accumulation_unit_roundoff(problem.dtype)) +
        (2.0 * seq_k + 10.0) * kFloat32UnitRoundoff;
  } else {
    accumulation_spread =
        2.0 * gamma(seq_k, kFloat32UnitRoundoff) + (2.0 * seq_k + 10.0) * kFloat32UnitRoundoff;
  }
  // fp8 inputs' descale factors: Q's and K's multiply the score's scale (two fp32 roundings more
  // of every score), V's the output before its rounding (one more, of |O| <= A).
  const bool scores_descaled =
      problem.descaled(problem.q_storage) || problem.descaled(problem.k_storage);
  const bool output_descaled = problem.descaled(problem.v_storage);
  magnitude_factor_base = 2.0 * probability_unit_roundoff + accumulation_spread +
                          (output_descaled ? kFloat32UnitRoundoff : 0.0);
  // fp8 inputs dequantized into a 16-bit dtype (--dequantize-to): V's elements each rounded once
  // more (a relative factor on A, eta_D absolute), Q's and K's likewise before their products.
  value_dequantization_unit_roundoff =
      numerics.dequantization_unit_roundoff(problem, problem.v_storage);
  if (value_dequantization_unit_roundoff >
      0.0) {  // (composed only then: the locked bounds as ever)
    magnitude_factor_base =
        (1.0 + magnitude_factor_base) * (1.0 + value_dequantization_unit_roundoff) - 1.0;
  }
  dequantized_value_half_subnormal =
      numerics.dequantization_half_subnormal(problem, problem.v_storage);
  accumulator_underflow = seq_k * numerics.accumulation_half_subnormal(problem.dtype);
  score_gamma = gamma(static_cast<double>(problem.head_dim) + (scores_descaled ? 4.0 : 2.0),
                      kFloat32UnitRoundoff);
  const double query_rounding = numerics.dequantization_unit_roundoff(problem, problem.q_storage);
  const double key_rounding = numerics.dequantization_unit_roundoff(problem, problem.k_storage);
  scores_dequantized = query_rounding > 0.0 || key_rounding > 0.0;
  if (scores_dequantized) {
    score_gamma = (1.0 + score_gamma) * (1.0 + query_rounding) * (1.0 + key_rounding) - 1.0;
  }
  softcap = problem.softcap;
  alibi = problem.alibi;
  seq_len_k = seq_k;
  this->numerics = &numerics;
}

namespace {

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

ElementReport element_report(std::int64_t b, std::int64_t h, std::int64_t i,
                             const RowElement& element) {
  return {b, h, i, element.dim, element.expected, element.actual, element.allowed, element.fault};
}

// Why row (b, h, i) cannot be judged: the oracle overflowed on it, the declared accumulation lets
// its outputs move too far, or its bound lets the probabilities move by `spread` (infinite when
// even that overflowed).
std::string inconclusive_row_reason(const ToleranceTerms& terms, std::int64_t b, std::int64_t h,
                                    std::int64_t i, double spread, bool oracle_overflowed) {
  std::ostringstream reason;
  reason.precision(3);
  reason << "inconclusive: row (b=" << b << ", h=" << h << ", i=" << i << ") ";
  if (oracle_overflowed) {
    reason << "has scores or values beyond float64's range: the oracle cannot compute it";
  } else if (!terms.accumulation_judgeable()) {
    reason << "sums " << static_cast<long long>(terms.seq_len_k) << " keys in the declared "
           << accumulation_name(*terms.numerics)
           << " accumulator, whose roundings may move an output by ";
    if (std::isfinite(terms.accumulation_spread)) {
      reason << 100.0 * terms.accumulation_spread << "% of its scale";
    } else {
      reason << "more than its scale";
    }
    reason << " (a verdict needs at most " << 100.0 * kMaxProbabilitySpread
           << "%): shorter rows, fewer roundings, or fp32 accumulation";
  } else {
    reason << "has scores so large that fp32 rounding";
    if (terms.scores_dequantized) {
      reason << " and the declared rounding of its fp8 inputs (--dequantize-to "
             << dequantization_name(*terms.numerics) << ")";
    }
    reason << " may move its probabilities by a factor of ";
    if (std::isfinite(spread)) {
      reason << 1.0 + spread;
    } else {
      reason << "any size";
    }
    reason << " (a verdict needs at most " << 1.0 + kMaxProbabilitySpread
           << "): lower softmax_scale or the data's scale";
  }
  return reason.str();
}

// Gathers the rows' checks (check_row), in (b, h, i) order, into a comparison's element figures,
// its first failure and worst element, its inconclusive rows, the bias test and the plain
// reference's largest error: row by row (add), or from a summary made elsewhere and the checks of
// the rows it names (name_row).
class ComparisonBuilder {
 public:
  // For rows to come one by one (add).
  ComparisonBuilder(const AttentionProblem& problem, const ToleranceTerms& terms)
      : terms_(terms), head_dim_(static_cast<double>(problem.head_dim)) {
    seen_rows_.reserve(static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q));
  }
  // For rows summarised elsewhere (name_row for the rows the summary names).
  ComparisonBuilder(const AttentionProblem& problem, const ToleranceTerms& terms,
                    const RowsSummary& summary)
      : terms_(terms), summary_(summary), head_dim_(static_cast<double>(problem.head_dim)) {}

  // Row (b, h, i), whose index in the compact order is `index`.
  void add(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t index, const RowCheck& row,
           Comparison& result) {
    // Rows with the same expected values count once in the bias test: the first of them.
    const bool bias_sample =
        row.judgeable && row.bias.weight > 0.0 && seen_rows_.insert(row.fingerprint);
    summary_.add(index, row, head_dim_, bias_sample);
    name_row(b, h, i, index, row, result);
  }

  // What the report says of row (b, h, i) where the summary names it.
  void name_row(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t index,
                const RowCheck& row, Comparison& result) const {
    if (index == summary_.first_failing_row) {
      result.first_failure = element_report(b, h, i, row.first_failure);
    }
    if (index == summary_.worst_row) result.worst_element = element_report(b, h, i, row.worst);
    if (index == summary_.first_inconclusive_row) {
      result.inconclusive_reason =
          inconclusive_row_reason(terms_, b, h, i, row.spread, row.oracle_overflowed);
    }
  }

  // The figures, the mean error, the correlation and the bias test; any non-finite element makes
  // the mean and the correlation undefined and the maximum error infinite. Returns the plain
  // reference's largest error.
  double finish(Comparison& result) const {
    result.elements = summary_.elements;
    result.failing_elements = summary_.failing;
    result.inconclusive_rows = summary_.inconclusive_rows;
    result.bound_ratio = summary_.worst_row >= 0 ? summary_.worst_ratio : 0.0;
    result.max_abs_error = summary_.max_abs_error;
    result.max_rel_error = summary_.max_rel_error;
    const double count = static_cast<double>(std::max<std::int64_t>(result.elements, 1));
    result.mean_abs_error = summary_.nonfinite > 0 ? std::numeric_limits<double>::quiet_NaN()
                                                   : summary_.abs_error_sum / count;
    if (summary_.nonfinite > 0) {
      result.max_abs_error = std::numeric_limits<double>::infinity();
      result.correlation = std::numeric_limits<double>::quiet_NaN();
    } else {
      const double squares_expected = summary_.squares_expected;
      const double squares_actual = summary_.squares_actual;
      result.correlation = squares_expected > 0.0 && squares_actual > 0.0
                               ? summary_.co_moment / std::sqrt(squares_expected * squares_actual)
                               : (squares_expected == squares_actual ? 1.0 : 0.0);
    }
    result.bias = rounding_bias_of(summary_.bias);
    return summary_.plain_max_error;
  }

 private:
  const ToleranceTerms& terms_;
  RowsSummary summary_;
  double head_dim_;
  FingerprintSet seen_rows_;
};

// Every row's log-sum-exp against its bound. A row that sees no key must hold an infinity: -inf
// (the log of an empty sum) or +inf (FlashAttention 2's convention, which makes the backward pass's
// exp(s - lse) 0).
void check_log_sum_exp(const AttentionProblem& problem, const ToleranceTerms& terms,
                       const ReferenceAttention& reference, const float* lse, Comparison& result) {
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        const float stored = lse[problem.lse_offset(b, i, h)];
        const double actual = stored;
        const double expected = reference.log_sum_exp[row_index];
        ++result.lse_rows;
        std::ostringstream fault;
        fault.precision(6);
        fault << "log-sum-exp of row (b=" << b << ", h=" << h << ", i=" << i << ")";
        if (std::bit_cast<std::uint32_t>(stored) == kFloat32PoisonBits) {
          fault << " was never written; expected " << expected;
        } else if (std::isinf(expected)) {
          if (std::isinf(actual)) continue;  // no key seen: either infinity
          fault << " is " << actual << " where the row sees no key (expected -inf or +inf)";
        } else if (!std::isfinite(actual)) {
          fault << " is " << actual << " where the reference is " << expected;
        } else {
          const double score_error =
              terms.score_error(reference.score_scale[row_index], reference.bias_scale[row_index]);
          const double allowed =
              terms.lse_allowed(expected, score_error, reference.score_scale[row_index],
                                reference.bias_scale[row_index]);
          const double error = std::fabs(actual - expected);
          result.lse_max_abs_error = std::max(result.lse_max_abs_error, error);
          result.lse_bound_ratio = std::max(result.lse_bound_ratio, error / allowed);
          if (error <= allowed) continue;
          fault << ": expected " << expected << ", got " << actual << ", error " << error
                << " > allowed " << allowed;
        }
        // No usable value, or a finite one where there is none: no ratio measures it.
        if (!std::isfinite(actual) || !std::isfinite(expected)) {
          result.lse_bound_ratio = std::numeric_limits<double>::infinity();
        }
        if (result.lse_failing_rows++ == 0) result.lse_first_failure = fault.str();
      }
    }
  }
}

// FlashAttention's rule: max error <= 2 * (plain same-precision max error) + atol, where atol
// is one rounding, of unit roundoff `unit_roundoff`, of the largest reference value.
void apply_flash_attention_rule(double unit_roundoff, double max_expected, double plain_max_error,
                                Comparison& result) {
  result.plain_max_abs_error = plain_max_error;
  result.fa_rule_atol = unit_roundoff * max_expected;
  const double fa_limit = 2.0 * result.plain_max_abs_error + result.fa_rule_atol;
  result.fa_rule_ratio = fa_limit > 0.0               ? result.max_abs_error / fa_limit
                         : result.max_abs_error > 0.0 ? std::numeric_limits<double>::infinity()
                                                      : 0.0;
}

// One line saying which way the errors lean, by how much and how surely.
std::string bias_reason(const RoundingBias& bias) {
  const bool outward =
      bias_closeness(bias.outward_z, bias.outward_steps, bias.plain_outward_steps) > 1.0;
  const double z = outward ? bias.outward_z : bias.upward_z;
  const double steps = outward ? bias.outward_steps : bias.upward_steps;
  const double plain_steps = outward ? bias.plain_outward_steps : bias.plain_upward_steps;
  const char* direction = outward ? (steps < 0.0 ? "toward zero" : "away from zero")
                                  : (steps < 0.0 ? "downward" : "upward");
  std::ostringstream reason;
  reason.precision(3);
  reason << "rounding bias: the errors lean " << direction << " by " << std::fabs(steps)
         << " output rounding steps on average over " << bias.rows << " rows (z = " << z
         << "; correct rounding stays within |z| <= " << kBiasZLimit << " or " << kBiasMinSteps
         << " steps, or as far as a plain computation in the input precision leans, " << plain_steps
         << "): an output conversion that truncates or rounds one way?";
  return reason.str();
}

// One line naming the first failing element, or else the rule that failed; empty on a pass.
std::string failure_reason(const AttentionProblem& problem, const Comparison& result) {
  if (result.first_failure) {
    std::ostringstream reason;
    reason << describe_element(*result.first_failure) << "; " << result.failing_elements << " of "
           << result.elements << " elements fail";
    return reason.str();
  }
  if (result.lse_failing_rows > 0) {
    return result.lse_first_failure + "; " + std::to_string(result.lse_failing_rows) + " of " +
           std::to_string(result.lse_rows) + " log-sum-exp rows fail";
  }
  if (result.fa_rule_ratio > 1.0) {
    std::ostringstream reason;
    reason.precision(6);
    reason << "FlashAttention rule: max error " << result.max_abs_error << " > 2 x plain "
           << dtype_name(problem.dtype) << " error " << result.plain_max_abs_error << " + "
           << result.fa_rule_atol << "; worst " << describe_element(result.worst_element);
    return reason.str();
  }
  if (result.bias.leans) return bias_reason(result.bias);
  if (result.inconclusive) {
    return result.inconclusive_rows > 0
               ? result.inconclusive_reason + " (" + std::to_string(result.inconclusive_rows) +
                     " such rows)"
               : "inconclusive: the error figures are not finite";
  }
  return {};
}

}  // namespace

std::string_view element_fault_name(ElementFault fault) {
  constexpr std::string_view names[] = {"none", "unwritten", "nonfinite", "beyond_bound"};
  return names[static_cast<int>(fault)];
}

double allowed_error(const AttentionProblem& problem, const ReferenceAttention& reference,
                     std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim,
                     const DeclaredNumerics& numerics) {
  const ToleranceTerms terms(problem, numerics);
  const std::int64_t index = compact_index(problem, batch, head, row, dim);
  const std::int64_t row_index = index / problem.head_dim;
  const std::int64_t kv_head = head / problem.group_size();
  return terms.allowed(
      reference.output[index], reference.magnitude[index], reference.inverse_row_sum[row_index],
      terms.score_error(reference.score_scale[row_index], reference.bias_scale[row_index]),
      reference.value_abs_sum[(batch * problem.kv_heads + kv_head) * problem.head_dim + dim]);
}

OracleFreeBound::OracleFreeBound(const AttentionProblem& problem, const AttentionTensors& inputs,
                                 const DeclaredNumerics& numerics)
    : problem_(problem), numerics_(numerics) {
  // Each input's values: its patterns decoded, times its descale factor (fp8 inputs).
  const std::span<const float> widen_q = widening_table(problem.q_dtype());
  const std::span<const float> widen_k = widening_table(problem.k_dtype());
  const std::span<const float> widen_v = widening_table(problem.v_dtype());
  const std::int64_t dim = problem.head_dim;
  auto norm = [&](const std::uint16_t* row, std::span<const float> widen, double factor) {
    double sum = 0.0;
    for (std::int64_t d = 0; d < dim; ++d)
      sum += static_cast<double>(widen[row[d]]) * widen[row[d]];
    return std::sqrt(sum) * factor;
  };
  value_abs_max_.assign(static_cast<std::size_t>(problem.batch * problem.kv_heads * dim), 0.0);
  value_abs_sum_ = value_abs_max_;
  // Under a declared dequantization, fp8 Q's and K's norms padded for its rounding.
  const double query_padding = numerics.dequantization_norm_padding(problem, problem.q_storage);
  const double key_padding = numerics.dequantization_norm_padding(problem, problem.k_storage);
  std::vector<double> max_key_norm(static_cast<std::size_t>(problem.batch * problem.kv_heads), 0.0);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
      const std::int64_t slot = b * problem.kv_heads + kv;
      const double key_factor = descale_at(inputs.k_descale, problem.kv_heads, b, kv);
      const double value_factor = descale_at(inputs.v_descale, problem.kv_heads, b, kv);
      for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
        const std::uint16_t* k_row = key_row(problem, inputs, b, j, kv);
        const std::uint16_t* v_row = value_row(problem, inputs, b, j, kv);
        max_key_norm[slot] =
            std::max(max_key_norm[slot], norm(k_row, widen_k, key_factor) + key_padding);
        for (std::int64_t d = 0; d < dim; ++d) {
          const double magnitude = std::fabs(widen_v[v_row[d]] * value_factor);
          value_abs_max_[slot * dim + d] = std::max(value_abs_max_[slot * dim + d], magnitude);
          value_abs_sum_[slot * dim + d] += magnitude;
        }
      }
    }
  }
  score_scale_.assign(static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q),
                      0.0);
  bias_scale_ = score_scale_;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv = h / problem.group_size();
      const double key_norm = max_key_norm[b * problem.kv_heads + kv];
      const double query_factor = descale_at(inputs.q_descale, problem.kv_heads, b, kv);
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::uint16_t* q_row = query_row(problem, inputs, b, i, h);
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        score_scale_[row_index] =
            problem.softmax_scale * (norm(q_row, widen_q, query_factor) + query_padding) * key_norm;
        bias_scale_[row_index] = problem.largest_bias(b, h, i);
      }
    }
  }
}

double OracleFreeBound::allowed(std::int64_t batch, std::int64_t head, std::int64_t row,
                                std::int64_t dim, double output_magnitude) const {
  const ToleranceTerms terms(problem_, numerics_);
  const std::int64_t slot =
      (batch * problem_.kv_heads + head / problem_.group_size()) * problem_.head_dim + dim;
  if (problem_.visible_keys_of(batch, row).empty()) return terms.half_subnormal;  // exactly 0
  const std::int64_t row_index = (batch * problem_.heads + head) * problem_.seq_len_q + row;
  return terms.allowed(output_magnitude, value_abs_max_[slot], 1.0,
                       terms.score_error(score_scale_[row_index], bias_scale_[row_index]),
                       value_abs_sum_[slot]);
}

namespace {

// The verdict from the element figures and the plain reference's largest error: the bias test
// where it applies, FlashAttention's rule, the log-sum-exp (already checked), the error ratio and
// the reason.
void conclude(const AttentionProblem& problem, const ToleranceTerms& terms,
              const DeclaredNumerics& numerics, double max_abs_expected, double plain_max_error,
              Comparison& result) {
  // The bias test's model, that a correct kernel's errors are symmetric, does not hold for a
  // low-precision accumulator: addends below half its step are lost (stagnation), which leans
  // toward zero. Nor for P rounded coarser than the output: a row's rounded probabilities need not
  // sum to the row sum the kernel divides by, which leans all of its outputs one way. Nor for fp8
  // inputs dequantized into a 16-bit dtype: one rounding of each V element is shared by every row
  // that reads it, which leans a column's errors alike. Under such declared numerics the bounds and
  // FlashAttention's rule judge alone.
  if (numerics.accumulation_declared() || terms.probability_unit_roundoff > terms.unit_roundoff ||
      (numerics.dequantization_declared() && problem.fp8_inputs())) {
    result.bias = RoundingBias{};
  }
  // The rule's atol is one rounding of the largest output, or of P where P is coarser: the least
  // error a kernel with those numerics can promise.
  apply_flash_attention_rule(std::max(terms.unit_roundoff, terms.probability_unit_roundoff),
                             max_abs_expected, plain_max_error, result);
  // Under a declared dequantization of fp8 inputs, the kernel and the plain reference round the
  // inputs alike, so in a row the bound cannot pin both errors are that one perturbation, seen
  // through the plain reference's further roundings of its scores, which may undo part of it: no
  // yardstick there (the rule failed 5 of 6,676 fp8 cases of a kernel with those numerics, each
  // with rows no bound pinned). Such a case is inconclusive, as its bound says; where every row is
  // pinned, the rule judges.
  if (numerics.dequantization_declared() && problem.fp8_inputs() && result.inconclusive_rows > 0) {
    result.fa_rule_ratio = 0.0;
  }
  result.error_ratio = std::max(
      {result.bound_ratio, result.fa_rule_ratio, result.bias.ratio, result.lse_bound_ratio});
  // A failure is sound anywhere a bound was computed; a pass needs every row judged.
  result.failed = result.failing_elements > 0 || result.fa_rule_ratio > 1.0 || result.bias.leans ||
                  result.lse_failing_rows > 0;
  result.inconclusive =
      !result.failed && (result.inconclusive_rows > 0 || !std::isfinite(result.error_ratio));
  result.passed = !result.failed && !result.inconclusive;
  result.reason = failure_reason(problem, result);
}

}  // namespace

double max_abs_expected(const LargeBuffer<double>& expected) {
  double max_abs = 0.0;
  for (double value : expected) max_abs = std::max(max_abs, std::fabs(value));
  return max_abs;
}

Comparison compare_to_reference(const AttentionProblem& problem,
                                const ReferenceAttention& reference,
                                const std::vector<float>& plain, const std::uint16_t* output,
                                const DeclaredNumerics& numerics, const float* lse) {
  const ToleranceTerms terms(problem, numerics);
  const RoundingSteps steps = rounding_steps_of(problem);
  const double max_expected = max_abs_expected(reference.output);
  // Relative errors count only where |expected| is at least one output rounding of the largest.
  const double relative_floor = terms.unit_roundoff * max_expected;
  const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
  const std::span<const float> widening = widening_table(problem.dtype);
  const auto widen = [&](std::uint16_t bits) { return static_cast<double>(widening[bits]); };
  const std::int64_t dim = problem.head_dim;
  Comparison result;
  ComparisonBuilder builder(problem, terms);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv_head = h / problem.group_size();
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        const RowArrays row{&reference.output[row_index * dim],
                            &reference.magnitude[row_index * dim],
                            &reference.value_abs_sum[(b * problem.kv_heads + kv_head) * dim],
                            reference.inverse_row_sum[row_index],
                            reference.score_scale[row_index],
                            reference.bias_scale[row_index],
                            output_row(problem, output, b, i, h),
                            plain.empty() ? nullptr : &plain[row_index * dim],
                            static_cast<std::uint64_t>(kv_head)};
        builder.add(b, h, i, row_index,
                    check_row(row, dim, terms, steps, poison, relative_floor, widen), result);
      }
    }
  }
  const double plain_max_error = builder.finish(result);
  if (problem.return_lse && lse != nullptr)
    check_log_sum_exp(problem, terms, reference, lse, result);
  conclude(problem, terms, numerics, max_expected, plain_max_error, result);
  return result;
}

Comparison comparison_of_rows(const AttentionProblem& problem, std::span<const RowCheck> rows,
                              double max_abs_expected, const DeclaredNumerics& numerics) {
  if (problem.return_lse) {
    throw std::invalid_argument("comparison_of_rows: the log-sum-exp is checked on the host only");
  }
  const ToleranceTerms terms(problem, numerics);
  Comparison result;
  ComparisonBuilder builder(problem, terms);
  std::size_t next = 0;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        if (next == rows.size()) throw std::invalid_argument("comparison_of_rows: too few rows");
        const auto index = static_cast<std::int64_t>(next);
        builder.add(b, h, i, index, rows[next++], result);
      }
    }
  }
  if (next != rows.size()) throw std::invalid_argument("comparison_of_rows: too many rows");
  conclude(problem, terms, numerics, max_abs_expected, builder.finish(result), result);
  return result;
}

Comparison comparison_of_summary(const AttentionProblem& problem, const RowsSummary& summary,
                                 const NamedRowChecks& named, double max_abs_expected,
                                 const DeclaredNumerics& numerics) {
  if (problem.return_lse || problem.varlen_q || problem.varlen_k) {
    throw std::invalid_argument(
        "comparison_of_summary: takes neither packed sequences nor the log-sum-exp");
  }
  const ToleranceTerms terms(problem, numerics);
  Comparison result;
  ComparisonBuilder builder(problem, terms, summary);
  const std::pair<std::int64_t, const RowCheck*> rows[] = {
      {summary.first_failing_row, &named.first_failing},
      {summary.worst_row, &named.worst},
      {summary.first_inconclusive_row, &named.first_inconclusive}};
  for (const auto& [index, row] : rows) {
    if (index < 0) continue;
    const std::int64_t i = index % problem.seq_len_q;
    const std::int64_t h = (index / problem.seq_len_q) % problem.heads;
    const std::int64_t b = index / (problem.seq_len_q * problem.heads);
    builder.name_row(b, h, i, index, *row, result);
  }
  conclude(problem, terms, numerics, max_abs_expected, builder.finish(result), result);
  return result;
}

}  // namespace attnfuzz
