// SPDX-License-Identifier: BSD-3-Clause
// How close is close enough: compares a kernel's output with the float64 reference under a
// per-element bound derived from the dtype's unit roundoff and the data's scale
// (docs/tolerance.md), and under FlashAttention's rule (at most twice the plain same-precision
// error, plus one output rounding of the largest value).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/attention_problem.h"
#include "oracle/declared_numerics.h"
#include "oracle/reference_attention.h"
#include "oracle/rounding_bias.h"
#include "oracle/row_check.h"
#include "oracle/rows_summary.h"

namespace attnfuzz {

// What is wrong with one output element: ElementFault (oracle/row_check.h).
std::string_view element_fault_name(ElementFault fault);

struct ElementReport {
  std::int64_t batch = 0, head = 0, row = 0, dim = 0;
  double expected = 0.0;
  double actual = 0.0;
  double allowed = 0.0;  // the element's bound
  ElementFault fault = ElementFault::none;
};

struct Comparison {
  bool passed = false;        // every element judged and within its bound, both rules kept
  bool failed = false;        // some element, the FlashAttention rule or the bias test fails
  bool inconclusive = false;  // neither: some row could not be judged (inconclusive_rows)
  std::string reason;  // empty when passed; otherwise one line naming the first failing element

  double max_abs_error = 0.0;
  double mean_abs_error = 0.0;
  double max_rel_error = 0.0;  // over elements with |expected| >= u_out * max|expected|
  double correlation = 0.0;    // Pearson, kernel vs reference
  double bound_ratio = 0.0;    // max over elements of |error| / allowed
  double fa_rule_ratio = 0.0;  // max|error| / (2 * plain max|error| + atol)
  double error_ratio = 0.0;    // max of the three with bias.ratio: > 1 exactly when a numeric
                               // check fails
  double plain_max_abs_error = 0.0;
  double fa_rule_atol = 0.0;

  std::int64_t elements = 0;
  std::int64_t failing_elements = 0;  // unwritten, non-finite or beyond the bound
  // Rows where no verdict means anything: the oracle overflowed, or the bound stopped pinning the
  // probabilities (kMaxProbabilitySpread). A case with any is never passed.
  std::int64_t inconclusive_rows = 0;
  std::string inconclusive_reason;  // the first such row and why; empty when none
  // The log-sum-exp output (problem.return_lse): the largest |error| / bound over its rows, and
  // its rows that fail (never written, not finite where the reference is, or beyond the bound).
  double lse_bound_ratio = 0.0;
  double lse_max_abs_error = 0.0;
  std::int64_t lse_rows = 0;
  std::int64_t lse_failing_rows = 0;
  std::string lse_first_failure;  // one line naming the first failing row; empty when none
  RoundingBias bias;              // the bias test over the whole output
  std::optional<ElementReport> first_failure;  // in (batch, head, row, dim) order
  ElementReport worst_element;                 // largest |error| / allowed
};

// The per-element bound for element (batch, head, row, dim) of `reference`, in absolute terms.
double allowed_error(const AttentionProblem& problem, const ReferenceAttention& reference,
                     std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim,
                     const DeclaredNumerics& numerics = {});

// The same bound without a reference, for comparing two kernel outputs that must agree
// (metamorphic properties). It replaces A_id by max_j |V_jd| (A is an average of those) and 1/l_i
// by 1 (l_i >= 1), so it is looser but needs only the inputs: each output is within it of the
// truth, so two outputs may differ by at most twice it.
class OracleFreeBound {
 public:
  OracleFreeBound(const AttentionProblem& problem, const AttentionTensors& inputs,
                  const DeclaredNumerics& numerics = {});
  // `output_magnitude`: the larger |O_id| of the two outputs compared.
  double allowed(std::int64_t batch, std::int64_t head, std::int64_t row, std::int64_t dim,
                 double output_magnitude) const;

 private:
  AttentionProblem problem_;
  DeclaredNumerics numerics_;
  std::vector<double> score_scale_;    // [batch][heads][seq_len_q]
  std::vector<double> bias_scale_;     // [batch][heads][seq_len_q]
  std::vector<double> value_abs_max_;  // [batch][kv_heads][head_dim]
  std::vector<double> value_abs_sum_;  // [batch][kv_heads][head_dim]
};

// `output` points at element [0,0,0,0] of the kernel's output, laid out by problem.o_strides.
// `plain` is plain_attention()'s result for the same inputs and `numerics`. Under declared numerics
// (an accumulation, a P dtype) the bounds follow them, and the bias test is not applied where they
// make a correct kernel's errors lean (an accumulator other than fp32, P coarser than the output).
// `lse`, when the problem returns the log-sum-exp, is the kernel's (laid out by
// problem.lse_offset).
Comparison compare_to_reference(const AttentionProblem& problem,
                                const ReferenceAttention& reference,
                                const std::vector<float>& plain, const std::uint16_t* output,
                                const DeclaredNumerics& numerics = {}, const float* lse = nullptr);

// The largest |O| of a reference's output (NaN left out, as std::max leaves it): what sets the
// relative errors' floor and FlashAttention's rule's atol.
double max_abs_expected(const LargeBuffer<double>& expected);

// The comparison of a kernel's output whose rows were checked elsewhere (on the GPU,
// oracle/device_comparison.h): `rows` holds check_row()'s result for every query row in (b, h, i)
// order, `max_abs_expected` is the largest |O| of the reference (it sets the relative errors'
// floor the rows were checked with, and FlashAttention's rule's atol).
// What compare_to_reference() gives for the same rows; a case that returns the log-sum-exp is
// compared by compare_to_reference() only.
Comparison comparison_of_rows(const AttentionProblem& problem, std::span<const RowCheck> rows,
                              double max_abs_expected, const DeclaredNumerics& numerics = {});

// The same from the rows' summary (oracle/rows_summary.h) and the checks of the rows it names,
// for a problem whose sequences are all as long as the longest, without the log-sum-exp: what
// comparison_of_rows() gives for rows that make that summary.
Comparison comparison_of_summary(const AttentionProblem& problem, const RowsSummary& summary,
                                 const NamedRowChecks& named, double max_abs_expected,
                                 const DeclaredNumerics& numerics = {});

}  // namespace attnfuzz
