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
// (oracle/declared_numerics.h), has 2 gamma(k) + 2 gamma_a(2 ceil(Sk / k)) in place of 2 gamma(Sk).
// dS_i = gamma(D + 2) * scale * |Q_i| max_j |K_j|, the fp32 error
// bound of a score. The score term is exact rather than first order: exponents each off by at
// most dS_i move a probability by a factor within exp(+-2 dS_i), so the first line's 2 dS_i is
// (exp(2 dS_i) - 1)(1 + the rest), which is what keeps the bound an upper bound for large scores.
#include "oracle/tolerance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

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

// A kernel may evaluate tanh approximately: PTX's tanh.approx.f32, which FlashAttention's
// soft-capping uses, has a relative error of at most 2^-10.987. 2^-10 covers it and the two fp32
// roundings of dividing by and multiplying with softcap.
constexpr double kSoftcapRelativeError = 0x1p-10;
// fp32 roundings ALiBi's bias takes part in: its product, its addition to the score, its division
// by and multiplication with the softmax scale (FlashAttention folds it so), the subtraction of
// the row maximum, and one to spare.
constexpr double kAlibiRoundings = 6.0;
// fp32 roundings of a log-sum-exp's final steps: logf (<= 2 ulp), the addition of the maximum,
// the scale's product, and one to spare.
constexpr double kLseRoundings = 5.0;

struct ToleranceTerms {
  double unit_roundoff;          // u of the input/output dtype
  double half_subnormal;         // eta
  double magnitude_factor_base;  // 2u + accumulation_spread
  double accumulator_underflow;  // Sk eta_acc: roundings of the accumulator below its normal range
  double accumulation_spread;    // what accumulating allows, relative to A (term 5)
  double score_gamma;            // gamma(D + 2)
  double softcap;                // the problem's (0: none)
  bool alibi;
  double seq_len_k;
  const DeclaredNumerics* numerics;  // what the kernel declared (--accumulation), for messages

  ToleranceTerms(const AttentionProblem& problem, const DeclaredNumerics& numerics) {
    const DtypeTraits& traits = traits_of(problem.dtype);
    const double seq_k = static_cast<double>(problem.seq_len_k);
    unit_roundoff = traits.unit_roundoff();
    half_subnormal = traits.min_subnormal / 2.0;
    if (numerics.declared()) {
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
    magnitude_factor_base = 2.0 * unit_roundoff + accumulation_spread;
    accumulator_underflow = seq_k * numerics.accumulation_half_subnormal(problem.dtype);
    score_gamma = gamma(static_cast<double>(problem.head_dim) + 2.0, kFloat32UnitRoundoff);
    softcap = problem.softcap;
    alibi = problem.alibi;
    seq_len_k = seq_k;
    this->numerics = &numerics;
  }

  // Whether the accumulation term pins the outputs: it lets each move by accumulation_spread of its
  // scale A, which, as for the probabilities, must be at most kMaxProbabilitySpread for a verdict.
  // With fp32 accumulation that holds to a million keys; an fp16 accumulator reaches it near 120.
  bool accumulation_judgeable() const { return accumulation_spread <= kMaxProbabilitySpread; }

  // dS_i: how far a kernel's fp32 score of row i may be from the exact one. The dot product and
  // the scale: gamma(D + 2) times the scores' bound. Soft-capping: tanh's slope is at most 1, so
  // that error passes through unamplified, and evaluating softcap * tanh(s / softcap) adds its own
  // (kSoftcapRelativeError of |result| <= min(softcap, bound)). ALiBi: the bias's product, its
  // addition and a rescaling by the softmax scale (as FlashAttention folds it), and the
  // subtraction of the row maximum, each one fp32 rounding of at most the bias's plus the score's
  // magnitude (kAlibiRoundings of them).
  double score_error(double score_scale, double bias_scale) const {
    double error = score_gamma * score_scale;
    const double capped = softcap > 0.0 ? std::min(softcap, score_scale) : score_scale;
    if (softcap > 0.0) error += kSoftcapRelativeError * capped;
    if (alibi) error += kAlibiRoundings * kFloat32UnitRoundoff * (bias_scale + capped);
    return error;
  }

  // exp(2 dS_i) - 1: how far, relatively, the bound lets each probability of the row move.
  double probability_spread(double score_error) const { return std::expm1(2.0 * score_error); }

  // The bound on a row's log-sum-exp (docs/tolerance.md): each exponent off by dS_i moves the log
  // of the sum by at most dS_i; the fp32 sum of Sk exponentials and its other roundings (the
  // accumulation term, log(1 + x) <= x); and logf and the addition of the row maximum, a few
  // roundings of |L|, of the maximum (at most the scores' bound) and of log(Sk).
  double lse_allowed(double expected, double score_error, double score_scale,
                     double bias_scale) const {
    const double capped = softcap > 0.0 ? std::min(softcap, score_scale) : score_scale;
    return score_error + accumulation_spread +
           kLseRoundings * kFloat32UnitRoundoff *
               (std::fabs(expected) + capped + bias_scale + std::log(seq_len_k + 1.0) + 1.0);
  }

  double allowed(double expected, double magnitude, double inverse_row_sum, double score_error,
                 double value_abs_sum) const {
    const double spread = probability_spread(score_error);
    const double before_rounding =
        (magnitude_factor_base + spread * (1.0 + magnitude_factor_base)) * magnitude +
        (half_subnormal * (value_abs_sum + seq_len_k * std::fabs(expected)) +
         kFloat32UnitRoundoff / std::numbers::e * value_abs_sum + accumulator_underflow) *
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

// Largest |O| and the sum of O over the whole reference output, in index order.
struct ExpectedSummary {
  double max_abs = 0.0;
  double sum = 0.0;
};

ExpectedSummary summarize_expected(const LargeBuffer<double>& expected) {
  ExpectedSummary summary;
  for (double value : expected) {
    summary.max_abs = std::max(summary.max_abs, std::fabs(value));
    summary.sum += value;
  }
  return summary;
}

// Sums over the elements checked so far, for the mean error and the correlation.
struct ErrorSums {
  double abs_error = 0.0;  // over finite elements
  double actual = 0.0;     // over finite elements
  std::int64_t nonfinite = 0;
};

// Judges one element: sets its fault and returns |error| / allowed, infinite when the element
// has no usable value. A finite element's error goes into the maxima and the sums.
inline double check_element(ElementReport& element, bool unwritten, double relative_floor,
                            Comparison& result, ErrorSums& sums) {
  if (unwritten) {
    element.fault = ElementFault::unwritten;
    return std::numeric_limits<double>::infinity();
  }
  if (!std::isfinite(element.actual)) {
    element.fault = ElementFault::nonfinite;
    return std::numeric_limits<double>::infinity();
  }
  const double error = std::fabs(element.actual - element.expected);
  const double ratio = error / element.allowed;
  if (ratio > 1.0) element.fault = ElementFault::beyond_bound;
  result.max_abs_error = std::max(result.max_abs_error, error);
  sums.abs_error += error;
  sums.actual += element.actual;
  if (std::fabs(element.expected) >= relative_floor && element.expected != 0.0) {
    result.max_rel_error = std::max(result.max_rel_error, error / std::fabs(element.expected));
  }
  return ratio;
}

// Counts a judged element: failures, the first of them (in (b, h, i, d) order) and the worst.
inline void record_verdict(const ElementReport& element, double ratio, Comparison& result,
                           ErrorSums& sums) {
  if (element.fault != ElementFault::none) {
    ++result.failing_elements;
    if (!result.first_failure) result.first_failure = element;
  }
  if (!std::isfinite(element.actual)) ++sums.nonfinite;
  if (ratio > result.bound_ratio || result.elements == 0) {
    result.bound_ratio = ratio;
    result.worst_element = element;
  }
  ++result.elements;
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
    reason << "has scores so large that fp32 rounding may move its probabilities by a factor of ";
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

// Every element of the kernel's output against its bound, in (b, h, i, d) order; the widened
// outputs go to `actual_values` (compact order) for the correlation. The bias test samples the
// kernel's errors and, beside them, the plain reference's (`plain`, compact; empty: none).
ErrorSums check_elements(const AttentionProblem& problem, const ToleranceTerms& terms,
                         const ReferenceAttention& reference, const std::vector<float>& plain,
                         const std::uint16_t* output, double relative_floor, Comparison& result,
                         std::vector<double>& actual_values) {
  ErrorSums sums;
  RoundingBiasTest bias(problem.dtype);
  const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
  const std::span<const float> widen = widening_table(problem.dtype);
  const std::int64_t dim = problem.head_dim;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv_head = h / problem.group_size();
      const double* value_abs_sum =
          &reference.value_abs_sum[(b * problem.kv_heads + kv_head) * dim];
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        const std::uint16_t* out_row = output_row(problem, output, b, i, h);
        const double score_error =
            terms.score_error(reference.score_scale[row_index], reference.bias_scale[row_index]);
        const double spread = terms.probability_spread(score_error);
        bool judgeable = spread <= kMaxProbabilitySpread && terms.accumulation_judgeable();
        bool oracle_overflowed = false;
        std::uint64_t fingerprint = static_cast<std::uint64_t>(kv_head);
        bias.begin_row();
        for (std::int64_t d = 0; d < dim; ++d) {
          const std::int64_t index = row_index * dim + d;
          const double expected = reference.output[index];
          const double actual = widen[out_row[d]];
          const double allowed =
              terms.allowed(expected, reference.magnitude[index],
                            reference.inverse_row_sum[row_index], score_error, value_abs_sum[d]);
          fingerprint = splitmix64_finalise(fingerprint ^ std::bit_cast<std::uint64_t>(expected));
          if (!std::isfinite(expected) || !std::isfinite(allowed)) {
            judgeable = false;  // nothing to compare with, or no bound to compare against
            oracle_overflowed = oracle_overflowed || !std::isfinite(expected);
            actual_values[index] = expected;
            continue;
          }
          actual_values[index] = actual;
          ElementReport element{b, h, i, d, expected, actual, allowed, ElementFault::none};
          const double ratio =
              check_element(element, out_row[d] == poison, relative_floor, result, sums);
          record_verdict(element, ratio, result, sums);
          if (element.fault == ElementFault::none) {
            bias.add(expected, actual, allowed, plain.empty() ? expected : plain[index]);
          }
        }
        if (judgeable) {
          bias.end_row(fingerprint);
        } else if (result.inconclusive_rows++ == 0) {
          result.inconclusive_reason =
              inconclusive_row_reason(terms, b, h, i, spread, oracle_overflowed);
        }
      }
    }
  }
  result.bias = bias.result();
  return sums;
}

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

// Pearson's correlation of kernel and reference outputs, given their means.
double correlation(const LargeBuffer<double>& expected, const std::vector<double>& actual,
                   double expected_mean, double actual_mean) {
  double covariance = 0.0, expected_var = 0.0, actual_var = 0.0;
  for (std::size_t index = 0; index < actual.size(); ++index) {
    const double de = expected[index] - expected_mean;
    const double da = actual[index] - actual_mean;
    covariance += de * da;
    expected_var += de * de;
    actual_var += da * da;
  }
  return (expected_var > 0.0 && actual_var > 0.0)
             ? covariance / std::sqrt(expected_var * actual_var)
             : (expected_var == actual_var ? 1.0 : 0.0);
}

// The mean error and the correlation; any non-finite element makes both undefined and the
// maximum error infinite.
void summarize_errors(const ErrorSums& sums, double expected_sum,
                      const LargeBuffer<double>& expected, const std::vector<double>& actual_values,
                      Comparison& result) {
  const double count = static_cast<double>(std::max<std::int64_t>(result.elements, 1));
  result.mean_abs_error =
      sums.nonfinite ? std::numeric_limits<double>::quiet_NaN() : sums.abs_error / count;
  if (sums.nonfinite) {
    result.max_abs_error = std::numeric_limits<double>::infinity();
    result.correlation = std::numeric_limits<double>::quiet_NaN();
  } else {
    const double expected_mean = expected_sum / count, actual_mean = sums.actual / count;
    result.correlation = correlation(expected, actual_values, expected_mean, actual_mean);
  }
}

// The plain same-precision implementation's max error. One that overflowed (its scores rounded
// to fp16 became inf) cannot judge: its error counts as infinite, which leaves the case to the
// per-element bound.
double plain_max_abs_error(const std::vector<float>& plain, const LargeBuffer<double>& expected) {
  double max_error = 0.0;
  for (std::size_t index = 0; index < plain.size(); ++index) {
    const double plain_error = std::fabs(plain[index] - expected[index]);
    max_error = std::isfinite(plain_error) ? std::max(max_error, plain_error)
                                           : std::numeric_limits<double>::infinity();
    if (!std::isfinite(plain_error)) break;
  }
  return max_error;
}

// FlashAttention's rule: max error <= 2 * (plain same-precision max error) + atol, where atol
// is one output rounding of the largest reference value.
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
      for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
        const std::uint16_t* k_row = key_row(problem, inputs, b, j, kv);
        const std::uint16_t* v_row = value_row(problem, inputs, b, j, kv);
        max_key_norm[slot] = std::max(max_key_norm[slot], norm(k_row));
        for (std::int64_t d = 0; d < dim; ++d) {
          const double magnitude = std::fabs(widen[v_row[d]]);
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
      const double key_norm = max_key_norm[b * problem.kv_heads + h / problem.group_size()];
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::uint16_t* q_row = query_row(problem, inputs, b, i, h);
        const std::int64_t row_index = (b * problem.heads + h) * problem.seq_len_q + i;
        score_scale_[row_index] = problem.softmax_scale * norm(q_row) * key_norm;
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

Comparison compare_to_reference(const AttentionProblem& problem,
                                const ReferenceAttention& reference,
                                const std::vector<float>& plain, const std::uint16_t* output,
                                const DeclaredNumerics& numerics, const float* lse) {
  const ToleranceTerms terms(problem, numerics);
  const ExpectedSummary expected = summarize_expected(reference.output);
  Comparison result;
  std::vector<double> actual_values(reference.output.size());
  // Relative errors count only where |expected| is at least one output rounding of the largest.
  const double relative_floor = terms.unit_roundoff * expected.max_abs;
  const ErrorSums sums = check_elements(problem, terms, reference, plain, output, relative_floor,
                                        result, actual_values);
  summarize_errors(sums, expected.sum, reference.output, actual_values, result);
  // The bias test's model, that a correct kernel's errors are symmetric, does not hold for a
  // low-precision accumulator: addends below half its step are lost (stagnation), which leans
  // toward zero. Under a declared accumulation the bounds and FlashAttention's rule judge alone.
  if (numerics.declared()) result.bias = RoundingBias{};
  apply_flash_attention_rule(terms.unit_roundoff, expected.max_abs,
                             plain_max_abs_error(plain, reference.output), result);
  if (problem.return_lse && lse != nullptr)
    check_log_sum_exp(problem, terms, reference, lse, result);
  result.error_ratio = std::max(
      {result.bound_ratio, result.fa_rule_ratio, result.bias.ratio, result.lse_bound_ratio});
  // A failure is sound anywhere a bound was computed; a pass needs every row judged.
  result.failed = result.failing_elements > 0 || result.fa_rule_ratio > 1.0 || result.bias.leans ||
                  result.lse_failing_rows > 0;
  result.inconclusive =
      !result.failed && (result.inconclusive_rows > 0 || !std::isfinite(result.error_ratio));
  result.passed = !result.failed && !result.inconclusive;
  result.reason = failure_reason(problem, result);
  return result;
}

}  // namespace attnfuzz
