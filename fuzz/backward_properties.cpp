// SPDX-License-Identifier: BSD-3-Clause
#include "fuzz/backward_properties.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/problem_features.h"
#include "oracle/backward_tolerance.h"
#include "oracle/tensor_rows.h"
#include "run/backward_check.h"

namespace attnfuzz {
namespace {

// Float64's own error in the relations' sums of the kernel's gradients: n 2^-53 of a sum's
// magnitude for n terms, n below 2^24 in any case the search draws. (The float64 gradients' own
// error lies far inside the bounds' fp32 terms.)
constexpr double kFloat64SumSlack = 0x1p-29;

constexpr GradientTensor kGradients[] = {GradientTensor::dq, GradientTensor::dk,
                                         GradientTensor::dv};

struct BackwardSubject {
  const AttentionKernel* kernel = nullptr;
  PlantedBug plant = PlantedBug::none;
  bool deterministic = true;
};

// One backward run of a relation: the case handed to the kernel, its bound, the kernel's
// gradients.
class JudgedRun {
 public:
  JudgedRun(const BackwardSubject& subject, std::unique_ptr<const BackwardCase> handed)
      : handed_(std::move(handed)),
        bound_(handed_->problem, handed_->forward, handed_->gradients),
        gradients_(
            backward_gradients(*subject.kernel, *handed_, subject.plant, subject.deterministic)) {}

  const AttentionProblem& problem() const { return handed_->problem; }
  const BackwardCase& handed() const { return *handed_; }
  // The run's first fault (an error, a changed input, a write outside the gradients); "" if none.
  const std::string& fault() const { return gradients_.fault; }
  // Past the dtype's range a correct kernel may overflow: nothing can be judged.
  bool in_range() const { return bound_.in_range(); }

  double value(GradientTensor tensor, std::int64_t b, std::int64_t head, std::int64_t row,
               std::int64_t d) const {
    const std::int64_t at = gradient_row_offset(problem(), tensor, b, head, row) + d;
    return dtype_to_float(gradients_.of(tensor)[static_cast<std::size_t>(at)], problem().dtype);
  }
  double allowed(GradientTensor tensor, std::int64_t b, std::int64_t head, std::int64_t row,
                 std::int64_t d) const {
    return bound_.allowed(tensor, gradient_index(problem(), tensor, b, head, row, d));
  }

 private:
  std::unique_ptr<const BackwardCase> handed_;  // the bound keeps references into it
  BackwardBound bound_;
  BackwardGradients gradients_;
};

// Calls visit(tensor, b, head, row) for every row of dQ, dK and dV (dense: every sequence full).
template <typename Visit>
void for_each_gradient_row(const AttentionProblem& problem, Visit&& visit) {
  for (const GradientTensor tensor : kGradients) {
    const bool query = tensor == GradientTensor::dq;
    for (std::int64_t b = 0; b < problem.batch; ++b)
      for (std::int64_t head = 0; head < (query ? problem.heads : problem.kv_heads); ++head)
        for (std::int64_t row = 0; row < (query ? problem.seq_len_q : problem.seq_len_k); ++row)
          visit(tensor, b, head, row);
  }
}

std::string element_name(GradientTensor tensor, std::int64_t b, std::int64_t head, std::int64_t row,
                         std::int64_t d) {
  std::ostringstream text;
  text << gradient_tensor_name(tensor) << "[b=" << b << ", h=" << head
       << (tensor == GradientTensor::dq ? ", i=" : ", j=") << row << ", d=" << d << "]";
  return text.str();
}

// A gradient element that is NaN or infinite, where every exact one is finite (in_range()).
std::optional<std::string> first_non_finite(const JudgedRun& run) {
  std::optional<std::string> found;
  for_each_gradient_row(run.problem(), [&](GradientTensor tensor, std::int64_t b, std::int64_t head,
                                           std::int64_t row) {
    for (std::int64_t d = 0; d < run.problem().head_dim && !found; ++d) {
      const double value = run.value(tensor, b, head, row, d);
      if (!std::isfinite(value)) {
        std::ostringstream text;
        text << element_name(tensor, b, head, row, d) << " is " << value
             << ", where the exact gradient is finite";
        found = text.str();
      }
    }
  });
  return found;
}

// A float64 sum of a relation's side: its value, the magnitude of its terms (for float64's own
// error) and what its terms' bounds allow it to be off by.
struct BoundedSum {
  double value = 0.0, magnitude = 0.0, allowed = 0.0;
  void add(double term, double term_allowed) {
    value += term;
    magnitude += std::fabs(term);
    allowed += term_allowed;
  }
  double slack() const { return allowed + kFloat64SumSlack * magnitude; }
};

// Each query row's softmax sums to one over the keys it sees, and its gradient to zero:
// sum_j dS_ij = sum_j P_ij (dP_ij - D_i) = D_i - D_i. So per (batch, kv head) and dimension,
// sum_j dK_j = 0 and sum_j dV_j = sum_i dO_i over the group's rows that see a key; and
// sum_i q_i . dQ_i = scale sum_ij dS_ij q_i . k_j = sum_j k_j . dK_j over the group.
PropertyCheck check_gradient_sums(const BackwardSubject& subject,
                                  const AttentionCase& attention_case) {
  const JudgedRun run(subject, std::make_unique<const BackwardCase>(attention_case, false));
  if (!run.fault().empty()) return PropertyCheck(run.fault());
  if (!run.in_range()) return PropertyCheck::not_judged();
  if (std::optional<std::string> non_finite = first_non_finite(run)) return {non_finite};
  const AttentionProblem& p = run.problem();
  const AttentionTensors inputs = run.handed().tensors();
  const std::uint16_t* grad_output = run.handed().grad_output.data();
  const std::int64_t group = p.group_size();
  const auto widen = [&](std::uint16_t bits) {
    return static_cast<double>(dtype_to_float(bits, p.dtype));
  };
  std::ostringstream text;
  text.precision(6);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t kv = 0; kv < p.kv_heads; ++kv) {
      const std::string where = "(b=" + std::to_string(b) + ", kv head=" + std::to_string(kv) + ")";
      BoundedSum query_side, key_side;
      for (std::int64_t d = 0; d < p.head_dim; ++d) {
        BoundedSum dk, dv, dout;
        for (std::int64_t j = 0; j < p.seq_len_k; ++j) {
          dk.add(run.value(GradientTensor::dk, b, kv, j, d),
                 run.allowed(GradientTensor::dk, b, kv, j, d));
          dv.add(run.value(GradientTensor::dv, b, kv, j, d),
                 run.allowed(GradientTensor::dv, b, kv, j, d));
          const double key = widen(key_row(p, inputs, b, j, kv)[d]);
          key_side.add(key * run.value(GradientTensor::dk, b, kv, j, d),
                       std::fabs(key) * run.allowed(GradientTensor::dk, b, kv, j, d));
        }
        for (std::int64_t h = kv * group; h < (kv + 1) * group; ++h) {
          for (std::int64_t i = 0; i < p.seq_len_q; ++i) {
            const double query = widen(query_row(p, inputs, b, i, h)[d]);
            query_side.add(query * run.value(GradientTensor::dq, b, h, i, d),
                           std::fabs(query) * run.allowed(GradientTensor::dq, b, h, i, d));
            if (!p.visible_keys_of(b, i).empty()) {
              dout.add(widen(output_row(p, grad_output, b, i, h)[d]), 0.0);
            }
          }
        }
        if (!(std::fabs(dk.value) <= dk.slack())) {
          text << "dK summed over the keys of " << where << " is " << dk.value << " at d=" << d
               << ", not 0 (allowed " << dk.slack()
               << "): each row's softmax gradient sums to zero over its keys";
          return PropertyCheck(text.str());
        }
        if (!(std::fabs(dv.value - dout.value) <= dv.slack() + dout.slack())) {
          text << "dV summed over the keys of " << where << " is " << dv.value << " at d=" << d
               << ", not dO summed over the group's rows that see a key, " << dout.value
               << " (allowed difference " << dv.slack() + dout.slack()
               << "): each row's probabilities sum to one";
          return PropertyCheck(text.str());
        }
      }
      if (!(std::fabs(query_side.value - key_side.value) <=
            query_side.slack() + key_side.slack())) {
        text << "q . dQ summed over the query rows of " << where << " is " << query_side.value
             << ", not k . dK summed over its keys, " << key_side.value << " (allowed difference "
             << query_side.slack() + key_side.slack()
             << "): both are scale times the sum of dS_ij q_i . k_j";
        return PropertyCheck(text.str());
      }
    }
  }
  return PropertyCheck(std::nullopt);
}

// Compares two runs' gradients: `second`'s element at the row `row_of` maps each row to, against
// `first`'s times `factor`, within `factor` times first's bound plus second's.
using RowMap = std::int64_t (*)(const AttentionProblem&, GradientTensor, std::int64_t);
PropertyCheck compare_runs(const JudgedRun& first, const JudgedRun& second, double factor,
                           RowMap row_of, const std::string& what) {
  if (!first.fault().empty()) return PropertyCheck(first.fault());
  if (!second.fault().empty()) return PropertyCheck(second.fault() + " (" + what + ")");
  if (!first.in_range() || !second.in_range()) return PropertyCheck::not_judged();
  const AttentionProblem& p = first.problem();
  std::optional<std::string> found;
  for_each_gradient_row(
      p, [&](GradientTensor tensor, std::int64_t b, std::int64_t head, std::int64_t row) {
        const std::int64_t mapped = row_of(p, tensor, row);
        for (std::int64_t d = 0; d < p.head_dim && !found; ++d) {
          const double expected = factor * first.value(tensor, b, head, row, d);
          const double got = second.value(tensor, b, head, mapped, d);
          const double limit = factor * first.allowed(tensor, b, head, row, d) +
                               second.allowed(tensor, b, head, mapped, d) +
                               kFloat64SumSlack * (std::fabs(expected) + std::fabs(got));
          if (std::fabs(expected - got) <= limit) continue;  // false for NaN: NaN always fails
          std::ostringstream text;
          text.precision(6);
          text << element_name(tensor, b, head, row, d) << " is "
               << first.value(tensor, b, head, row, d) << " but "
               << element_name(tensor, b, head, mapped, d) << " is " << got << " " << what
               << " (expected " << expected << ", allowed difference " << limit << ")";
          found = text.str();
        }
      });
  return PropertyCheck(found);
}

std::int64_t same_row(const AttentionProblem&, GradientTensor, std::int64_t row) {
  return row;
}

std::int64_t mirrored_key_row(const AttentionProblem& problem, GradientTensor tensor,
                              std::int64_t row) {
  return tensor == GradientTensor::dq ? row : problem.seq_len_k - 1 - row;
}

// The keys' order is the softmax's sum order: reversing the key/value pairs of a non-causal case
// reverses dK's and dV's rows and leaves dQ. Both runs get the same dO, and O and the log-sum-exp
// of their own float64 forward (equal but for float64's summation order).
PropertyCheck check_key_permutation(const BackwardSubject& subject,
                                    const AttentionCase& attention_case) {
  if (attention_case.causal) return PropertyCheck::not_judged();
  auto handed = std::make_unique<const BackwardCase>(attention_case, false);
  const AttentionProblem& p = handed->problem;
  AttentionInputs reversed = handed->inputs;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t kv = 0; kv < p.kv_heads; ++kv) {
      for (std::int64_t j = 0; j < p.seq_len_k; ++j) {
        const std::int64_t mirror = p.seq_len_k - 1 - j;
        std::copy_n(&handed->inputs.k[p.k_row_offset(b, mirror) + kv * p.k_strides.head],
                    p.head_dim, &reversed.k[p.k_row_offset(b, j) + kv * p.k_strides.head]);
        std::copy_n(&handed->inputs.v[p.v_row_offset(b, mirror) + kv * p.v_strides.head],
                    p.head_dim, &reversed.v[p.v_row_offset(b, j) + kv * p.v_strides.head]);
      }
    }
  }
  auto other =
      std::make_unique<const BackwardCase>(p, std::move(reversed), handed->grad_output, false);
  const JudgedRun first(subject, std::move(handed));
  const JudgedRun second(subject, std::move(other));
  return compare_runs(first, second, 1.0, mirrored_key_row,
                      "after reversing the order of the keys");
}

// The gradients are linear in dO, and doubling is exact: 2 dO gives 2 dQ, 2 dK and 2 dV.
PropertyCheck check_grad_output_scaling(const BackwardSubject& subject,
                                        const AttentionCase& attention_case) {
  auto handed = std::make_unique<const BackwardCase>(attention_case, false);
  const AttentionProblem& p = handed->problem;
  std::vector<std::uint16_t> doubled = handed->grad_output;
  for (std::uint16_t& bits : doubled) {
    const float twice = 2.0f * dtype_to_float(bits, p.dtype);
    bits = float_to_dtype(twice, p.dtype);
    if (!std::isfinite(dtype_to_float(bits, p.dtype))) return PropertyCheck::not_judged();
  }
  auto other = std::make_unique<const BackwardCase>(p, handed->inputs, std::move(doubled), false);
  const JudgedRun first(subject, std::move(handed));
  const JudgedRun second(subject, std::move(other));
  return compare_runs(first, second, 2.0, same_row, "after doubling dO");
}

}  // namespace

PropertyCheck check_backward_property(Property property, const AttentionCase& attention_case,
                                      const AttentionKernel& kernel, PlantedBug plant,
                                      bool deterministic) {
  // The relations are written for dense cases (the log-sum-exp output changes none of them).
  const std::uint32_t variants = features_of(problem_of(attention_case)) &
                                 ~static_cast<std::uint32_t>(ProblemFeature::return_lse);
  if (variants != 0) return PropertyCheck::not_judged();
  const BackwardSubject subject{&kernel, plant, deterministic};
  try {
    switch (property) {
      case Property::backward_gradient_sums:
        return check_gradient_sums(subject, attention_case);
      case Property::backward_key_permutation:
        return check_key_permutation(subject, attention_case);
      case Property::backward_grad_output_scaling:
        return check_grad_output_scaling(subject, attention_case);
      default:
        break;
    }
  } catch (const std::bad_alloc&) {
    return PropertyCheck::not_judged();  // out of memory here: the case cannot show it
  }
  return PropertyCheck::not_judged();
}

}  // namespace attnfuzz
