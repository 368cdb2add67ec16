// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/backward_comparison.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/dtype.h"

namespace attnfuzz {
namespace {

std::string describe(const GradientElementReport& element, std::string_view what) {
  std::ostringstream text;
  text.precision(6);
  text << gradient_tensor_name(element.tensor) << "[b=" << element.batch << ", h=" << element.head
       << ", " << (element.tensor == GradientTensor::dq ? "i=" : "j=") << element.row
       << ", d=" << element.dim << "] " << what << ": expected " << element.expected << ", got "
       << element.actual << " (allowed error " << element.allowed << ")";
  return text.str();
}

class Judge {
 public:
  Judge(const AttentionProblem& problem, const BackwardBound& bound, GradientComparison& result)
      : problem_(problem), bound_(bound), result_(result) {}

  // Element (batch, head, row, d) of `tensor`, its compact index `index`, the kernel's bits and
  // the plain backward's value (null: none).
  void element(GradientTensor tensor, const LargeBuffer<double>& expected, std::int64_t batch,
               std::int64_t head, std::int64_t row, std::int64_t d, std::int64_t index,
               std::uint16_t bits, const std::vector<float>* plain) {
    GradientElementReport report{tensor, batch, head, row, d, expected[index], 0.0, 0.0};
    const int which = static_cast<int>(tensor);
    max_expected_[which] = std::max(max_expected_[which], std::fabs(report.expected));
    if (plain != nullptr) {
      const double plain_error = std::fabs(
          static_cast<double>((*plain)[static_cast<std::size_t>(index)]) - report.expected);
      // NaN too: a plain backward that overflowed is no yardstick.
      plain_max_error_[which] =
          std::isfinite(plain_error) ? std::max(plain_max_error_[which], plain_error) : HUGE_VAL;
    }
    report.actual = dtype_to_float(bits, problem_.dtype);
    report.allowed = bound_.allowed(tensor, index);
    const double error = std::fabs(report.actual - report.expected);
    ++result_.elements;
    // Not within: NaN and infinities (a finite oracle's gradient) fail too.
    const bool within = error <= report.allowed;
    const double ratio = std::isfinite(error) ? error / report.allowed : HUGE_VAL;
    double& max_error = result_.max_abs_error[static_cast<int>(tensor)];
    max_error = std::max(max_error, std::isfinite(error) ? error : HUGE_VAL);
    if (ratio > result_.bound_ratio || result_.elements == 1) {
      result_.bound_ratio = std::max(result_.bound_ratio, ratio);
      result_.worst_element = report;
    }
    if (within || !bound_.in_range()) return;  // out of range, a failure means nothing
    ++result_.failing_elements;
    if (!result_.first_failure) {
      result_.first_failure = report;
      result_.reason =
          describe(report, std::isfinite(report.actual) ? "beyond its bound" : "not finite");
    }
  }

  // FlashAttention's rule over each gradient, after every element: the largest ratio, where the
  // plain backward stayed finite. A figure, not a verdict (docs/tolerance.md says why).
  void measure_flash_attention_rule(double unit_roundoff) {
    for (const GradientTensor tensor :
         {GradientTensor::dq, GradientTensor::dk, GradientTensor::dv}) {
      const int which = static_cast<int>(tensor);
      if (plain_max_error_[which] < 0.0 || !std::isfinite(plain_max_error_[which])) continue;
      const double limit = 2.0 * plain_max_error_[which] + unit_roundoff * max_expected_[which];
      // A gradient exactly 0 in both the oracle and the plain backward has no scale to measure by.
      if (limit == 0.0) continue;
      result_.fa_rule_ratio = std::max(result_.fa_rule_ratio, result_.max_abs_error[which] / limit);
    }
  }

 private:
  const AttentionProblem& problem_;
  const BackwardBound& bound_;
  GradientComparison& result_;
  double max_expected_[3] = {0.0, 0.0, 0.0};
  double plain_max_error_[3] = {-1.0, -1.0, -1.0};  // < 0: no plain backward
};

}  // namespace

GradientComparison compare_gradients(const AttentionProblem& problem,
                                     const ReferenceAttention& forward,
                                     const ReferenceGradients& gradients, const std::uint16_t* dq,
                                     const std::uint16_t* dk, const std::uint16_t* dv,
                                     const PlainGradients* plain) {
  GradientComparison result;
  const BackwardBound bound(problem, forward, gradients);
  Judge judge(problem, bound, result);
  // A plain backward that dropped saturated soft-capped terms is no yardstick (plain_backward.h).
  if (plain != nullptr && plain->softcap_saturated) plain = nullptr;
  const std::int64_t dim = problem.head_dim;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        const std::uint16_t* at = dq + problem.q_row_offset(b, i) + h * problem.q_strides.head;
        for (std::int64_t d = 0; d < dim; ++d) {
          judge.element(GradientTensor::dq, gradients.dq, b, h, i, d, row * dim + d, at[d],
                        plain != nullptr ? &plain->dq : nullptr);
        }
      }
    }
  }
  const struct {
    GradientTensor tensor;
    const LargeBuffer<double>& expected;
    const std::uint16_t* actual;
    const TensorStrides& strides;
    const std::vector<float>* plain;
  } key_tensors[] = {{GradientTensor::dk, gradients.dk, dk, problem.k_strides,
                      plain != nullptr ? &plain->dk : nullptr},
                     {GradientTensor::dv, gradients.dv, dv, problem.v_strides,
                      plain != nullptr ? &plain->dv : nullptr}};
  for (const auto& tensor : key_tensors) {
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
        for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
          const std::int64_t row = (b * problem.kv_heads + g) * problem.seq_len_k + j;
          const std::int64_t offset = tensor.tensor == GradientTensor::dk
                                          ? problem.k_row_offset(b, j)
                                          : problem.v_row_offset(b, j);
          const std::uint16_t* at = tensor.actual + offset + g * tensor.strides.head;
          for (std::int64_t d = 0; d < dim; ++d) {
            judge.element(tensor.tensor, tensor.expected, b, g, j, d, row * dim + d, at[d],
                          tensor.plain);
          }
        }
      }
    }
  }
  judge.measure_flash_attention_rule(traits_of(problem.dtype).unit_roundoff());
  result.failed = result.failing_elements > 0;
  if (!result.failed && !bound.judgeable()) {
    result.inconclusive = true;
    result.reason = "inconclusive: " + bound.why_not_judgeable();
  }
  result.passed = !result.failed && !result.inconclusive;
  if (result.failed && result.failing_elements > 1) {
    result.reason += " (" + std::to_string(result.failing_elements) + " elements fail)";
  }
  return result;
}

}  // namespace attnfuzz
