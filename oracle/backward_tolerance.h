// SPDX-License-Identifier: BSD-3-Clause
// How close is close enough for the backward pass: the per-element bound on dQ, dK and dV
// (docs/tolerance.md, "The backward pass"), derived term by term for the roundings a
// FlashAttention-2 backward performs: P recomputed in fp32 from the scores and the log-sum-exp it
// is handed, dP = dO V^T and D = rowsum(dO * O) accumulated in fp32, dS rounded to the input dtype
// for the dQ and dK products, P rounded to it for dV's, fp32 accumulation (in any order: atomics
// included), each head's dK and dV rounded before a GQA group is summed, and one final rounding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/attention_problem.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"

namespace attnfuzz {

// Which gradient an element belongs to.
enum class GradientTensor { dq, dk, dv };
std::string_view gradient_tensor_name(GradientTensor tensor);

// Element (b, head, row, d)'s index in the compact gradient `tensor` that BackwardBound::allowed
// and ReferenceGradients take: [batch][heads][seq_len_q][dim] for dQ, [batch][kv_heads][seq_len_k]
// [dim] for dK and dV.
inline std::int64_t gradient_index(const AttentionProblem& problem, GradientTensor tensor,
                                   std::int64_t b, std::int64_t head, std::int64_t row,
                                   std::int64_t d) {
  const bool query = tensor == GradientTensor::dq;
  const std::int64_t heads = query ? problem.heads : problem.kv_heads;
  const std::int64_t rows = query ? problem.seq_len_q : problem.seq_len_k;
  return ((b * heads + head) * rows + row) * problem.head_dim + d;
}

// A backward is handed O rounded to the dtype and the log-sum-exp rounded to fp32 from the float64
// forward, so its inputs are off by at most one rounding each: |O_id - O'_id| <= u |O_id| + eta
// and |L_i - L'_i| <= u32 |L_i|.
class BackwardBound {
 public:
  BackwardBound(const AttentionProblem& problem, const ReferenceAttention& forward,
                const ReferenceGradients& gradients);

  // The bound on element `index` of the compact gradient `tensor` ([batch][heads][seq][dim] for
  // dQ, [batch][kv_heads][seq_k][dim] for dK and dV).
  double allowed(GradientTensor tensor, std::int64_t index) const;

  // Whether a verdict means something: every row's dS pinned to within a quarter of its scale
  // (kappa' <= 1/4), and every dS and gradient's terms within half of what the dtype holds (past
  // it a correct kernel may overflow where the float64 oracle does not). When not,
  // why_not_judgeable() names the first row or element that is not.
  bool judgeable() const { return why_not_judgeable_.empty(); }
  const std::string& why_not_judgeable() const { return why_not_judgeable_; }
  // Whether every dS and gradient stays in the dtype's range, the part of judgeable() without
  // which not even a failure means anything (a correct kernel may overflow there). Past only
  // kappa's limit the bound is still an upper bound: an element beyond it is a sound failure.
  bool in_range() const { return in_range_; }

  // kappa_i: the relative error, against its weight w_ij, of each dS_ij of query row i
  // ([batch][heads][seq_len_q]) before dS is rounded; and P's own relative error.
  double score_gradient_error(std::int64_t row) const { return score_gradient_error_[row]; }
  double probability_error(std::int64_t row) const { return probability_error_[row]; }

 private:
  const AttentionProblem& problem_;
  const ReferenceGradients& gradients_;
  double unit_roundoff_ = 0.0, half_subnormal_ = 0.0;
  std::vector<double> probability_error_;     // epsilon_P,i  [batch][heads][seq_len_q]
  std::vector<double> score_gradient_error_;  // kappa_i      [batch][heads][seq_len_q]
  // dS_ij's absolute error below fp32's normal range, [batch][heads][seq_len_q].
  std::vector<double> score_gradient_underflow_;
  // The largest of each over the query rows of a (batch, kv head)'s group: dK and dV sum them.
  std::vector<double> group_probability_error_;         // [batch][kv_heads]
  std::vector<double> group_score_gradient_error_;      // [batch][kv_heads]
  std::vector<double> group_score_gradient_underflow_;  // [batch][kv_heads]
  std::string why_not_judgeable_;
  bool in_range_ = true;

  // The first gradient element whose terms reach `range` (or whose oracle overflowed); "" if none.
  std::string first_magnitude_out_of_range(double range) const;
};

}  // namespace attnfuzz
