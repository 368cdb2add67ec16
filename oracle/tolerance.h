// How close is close enough: compares a kernel's output with the float64 reference under a
// per-element bound derived from the dtype's unit roundoff and the data's scale
// (docs/tolerance.md), and under FlashAttention's rule (at most twice the plain same-precision
// error, plus one output rounding of the largest value).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/attention_problem.h"
#include "oracle/reference_attention.h"

namespace attnfuzz {

// What is wrong with one output element.
enum class ElementFault { none, unwritten, nonfinite, beyond_bound };
std::string_view element_fault_name(ElementFault fault);

struct ElementReport {
  std::int64_t batch = 0, head = 0, row = 0, dim = 0;
  double expected = 0.0;
  double actual = 0.0;
  double allowed = 0.0;  // the element's bound
  ElementFault fault = ElementFault::none;
};

struct Comparison {
  bool passed = false;
  std::string reason;  // empty when passed; otherwise one line naming the first failing element

  double max_abs_error = 0.0;
  double mean_abs_error = 0.0;
  double max_rel_error = 0.0;  // over elements with |expected| >= u_out * max|expected|
  double correlation = 0.0;    // Pearson, kernel vs reference
  double bound_ratio = 0.0;    // max over elements of |error| / allowed
  double fa_rule_ratio = 0.0;  // max|error| / (2 * plain max|error| + atol)
  double error_ratio = 0.0;    // max of the two: > 1 exactly when a numeric check fails
  double plain_max_abs_error = 0.0;
  double fa_rule_atol = 0.0;

  std::int64_t elements = 0;
  std::int64_t failing_elements = 0;           // unwritten, non-finite or beyond the bound
  std::optional<ElementReport> first_failure;  // in (batch, head, row, dim) order
  ElementReport worst_element;                 // largest |error| / allowed
};

// The per-element bound for element (batch, head, row, dim) of `reference`, in absolute terms.
double allowed_error(const AttentionProblem& problem, const ReferenceAttention& reference,
                     std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim);

// The same bound without a reference, for comparing two kernel outputs that must agree
// (metamorphic properties). It replaces A_id by max_j |V_jd| (A is an average of those) and 1/l_i
// by 1 (l_i >= 1), so it is looser but needs only the inputs: each output is within it of the
// truth, so two outputs may differ by at most twice it.
class OracleFreeBound {
 public:
  OracleFreeBound(const AttentionProblem& problem, const AttentionTensors& inputs);
  // `output_magnitude`: the larger |O_id| of the two outputs compared.
  double allowed(std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim,
                 double output_magnitude) const;

 private:
  AttentionProblem problem_;
  std::vector<double> score_scale_;    // [batch][heads][seq_len_q]
  std::vector<double> value_abs_max_;  // [batch][kv_heads][head_dim]
  std::vector<double> value_abs_sum_;  // [batch][kv_heads][head_dim]
};

// `output` points at element [0,0,0,0] of the kernel's output, laid out by problem.o_strides.
// `plain` is plain_attention()'s result for the same inputs.
Comparison compare_to_reference(const AttentionProblem& problem,
                                const ReferenceAttention& reference,
                                const std::vector<float>& plain, const std::uint16_t* output);

}  // namespace attnfuzz
