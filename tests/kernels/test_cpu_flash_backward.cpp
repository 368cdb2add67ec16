// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash's backward against the float64 gradients under the derived bound (BackwardBound), on
// random cases of every variant but paged K/V, handed O and the log-sum-exp from the float64
// forward as the harness hands them; and the bound is tight enough to see a backward that drops
// the rowsum(dO * O) term.
#include "kernels/cpu_flash_backward.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "fuzz/case_generator.h"
#include "kernels/flash_tile_traits.h"
#include "oracle/backward_tolerance.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

struct BackwardRun {
  AttentionProblem problem;
  AttentionInputs inputs;
  std::vector<std::uint16_t> output, grad_output, dq, dk, dv;
  std::vector<float> lse;
  ReferenceAttention forward;
  ReferenceGradients gradients;
};

// The case's inputs, dO drawn from its distribution (Q's draw of another seed, placed as O), the
// float64 forward and gradients, and O and the log-sum-exp rounded from them as a harness hands
// them to a backward.
BackwardRun prepare(AttentionCase c) {
  c.return_lse = true;
  BackwardRun run;
  run.problem = problem_of(c);
  const AttentionProblem& problem = run.problem;
  run.inputs = generate_inputs(problem, c.data, c.seed);
  const AttentionInputs drawn = generate_inputs(problem, c.data, c.seed ^ 0x9e3779b97f4a7c15ull);
  const AttentionTensors tensors = with_index_arrays(
      {run.inputs.q.data(), run.inputs.k.data(), run.inputs.v.data(), nullptr}, problem);
  run.forward = reference_attention(problem, tensors);
  run.output.assign(static_cast<std::size_t>(o_span(problem)), 0);
  run.grad_output.assign(run.output.size(), 0);
  run.lse.assign(static_cast<std::size_t>(lse_span(problem)), 0.0f);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        std::uint16_t* out = output_row(problem, run.output.data(), b, i, h);
        std::uint16_t* grad = output_row(problem, run.grad_output.data(), b, i, h);
        const std::uint16_t* drawn_row =
            query_row(problem, {drawn.q.data(), drawn.k.data(), drawn.v.data(), nullptr}, b, i, h);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          out[d] = float_to_dtype(
              static_cast<float>(run.forward.output[row * problem.head_dim + d]), problem.dtype);
          grad[d] = drawn_row[d];
        }
        run.lse[problem.lse_offset(b, i, h)] = static_cast<float>(run.forward.log_sum_exp[row]);
      }
    }
  }
  run.gradients = reference_backward(problem, tensors, run.grad_output.data());
  run.dq.assign(static_cast<std::size_t>(q_span(problem)), 0);
  run.dk.assign(static_cast<std::size_t>(k_span(problem)), 0);
  run.dv.assign(static_cast<std::size_t>(v_span(problem)), 0);
  return run;
}

void run_backward(BackwardRun& run) {
  AttentionTensors tensors = with_index_arrays(
      {run.inputs.q.data(), run.inputs.k.data(), run.inputs.v.data(), run.output.data()},
      run.problem);
  tensors.lse = run.lse.data();
  cpu_flash_backward(run.problem, tensors,
                     {run.grad_output.data(), run.dq.data(), run.dk.data(), run.dv.data()});
}

// The largest |error| / bound over every gradient element that exists.
double worst_bound_ratio(const BackwardRun& run, std::string* where = nullptr) {
  const AttentionProblem& problem = run.problem;
  const BackwardBound bound(problem, run.forward, run.gradients);
  const std::int64_t dim = problem.head_dim;
  double worst = 0.0;
  const auto check = [&](GradientTensor tensor, const LargeBuffer<double>& expected,
                         const std::uint16_t* actual, std::int64_t index) {
    const double error = std::fabs(dtype_to_float(*actual, problem.dtype) - expected[index]);
    const double ratio = error / bound.allowed(tensor, index);
    if (!(ratio <= worst)) {
      worst = std::isnan(ratio) ? INFINITY : ratio;
      if (where != nullptr) {
        *where = std::string(gradient_tensor_name(tensor)) + " element " + std::to_string(index);
      }
    }
  };
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        const std::uint16_t* dq =
            run.dq.data() + problem.q_row_offset(b, i) + h * problem.q_strides.head;
        for (std::int64_t d = 0; d < dim; ++d) {
          check(GradientTensor::dq, run.gradients.dq, dq + d, row * dim + d);
        }
      }
    }
    for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
      for (std::int64_t j = 0; j < problem.seq_len_k_of(b); ++j) {
        const std::int64_t row = (b * problem.kv_heads + g) * problem.seq_len_k + j;
        const std::uint16_t* dk =
            run.dk.data() + problem.k_row_offset(b, j) + g * problem.k_strides.head;
        const std::uint16_t* dv =
            run.dv.data() + problem.v_row_offset(b, j) + g * problem.v_strides.head;
        for (std::int64_t d = 0; d < dim; ++d) {
          check(GradientTensor::dk, run.gradients.dk, dk + d, row * dim + d);
          check(GradientTensor::dv, run.gradients.dv, dv + d, row * dim + d);
        }
      }
    }
  }
  return worst;
}

RC_GTEST_PROP(CpuFlashBackward, EveryGradientElementIsWithinTheDerivedBound, ()) {
  AttentionCase c = *with_variants(small_case({.max_seq_len = 96, .distributions = {}}));
  c.page_size = 0;  // the backward has no paged K/V
  RC_PRE(find_tile_config(c.head_dim) != nullptr);
  BackwardRun run = prepare(c);
  RC_PRE(BackwardBound(run.problem, run.forward, run.gradients).judgeable());
  run_backward(run);
  std::string where;
  const double ratio = worst_bound_ratio(run, &where);
  RC_ASSERT_FALSE(ratio > 1.0);
  RC_TAG(ratio > 0.5    ? "worst ratio 1/2 to 1"
         : ratio > 0.25 ? "worst ratio 1/4 to 1/2"
                        : "worst ratio at most 1/4");
  if (ratio > 1.0) RC_LOG() << describe_case(c) << ": " << where << " ratio " << ratio;
}

// FlashAttention's order for a GQA group: K and V expanded to every query head, each head's dK and
// dV rounded to the dtype, then the group summed (in fp32, rounded once more). The bound allows
// for it (docs/tolerance.md, term 6).
RC_GTEST_PROP(CpuFlashBackward, AGroupSummedFromHeadsRoundedToTheDtypeIsWithinTheBound, ()) {
  AttentionCase c = *small_case({.max_seq_len = 64, .distributions = {}});
  c.heads = c.kv_heads * *rc::gen::element<std::int64_t>(2, 4);
  c.layout = Layout::bshd;
  c.row_padding = 0;
  c.placement = Placement::shared;  // Q and O keep their strides when K and V gain heads
  c.causal = *rc::gen::arbitrary<bool>();
  RC_PRE(find_tile_config(c.head_dim) != nullptr);
  BackwardRun run = prepare(c);
  RC_PRE(BackwardBound(run.problem, run.forward, run.gradients).judgeable());
  run_backward(run);  // the grouped run, for its dQ

  // The expanded problem: every query head its own copy of its kv head's K and V.
  AttentionCase expanded_case = c;
  expanded_case.kv_heads = c.heads;
  const AttentionProblem expanded = problem_of(expanded_case);
  const AttentionProblem& problem = run.problem;
  const std::int64_t group = problem.group_size(), dim = problem.head_dim;
  std::vector<std::uint16_t> k(static_cast<std::size_t>(k_span(expanded))),
      v(static_cast<std::size_t>(v_span(expanded))), dk(k.size()), dv(v.size()), dq(run.dq.size());
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        std::copy_n(
            run.inputs.k.data() + problem.k_row_offset(b, j) + h / group * problem.k_strides.head,
            dim, k.data() + expanded.k_row_offset(b, j) + h * expanded.k_strides.head);
        std::copy_n(
            run.inputs.v.data() + problem.v_row_offset(b, j) + h / group * problem.v_strides.head,
            dim, v.data() + expanded.v_row_offset(b, j) + h * expanded.v_strides.head);
      }
    }
  }
  AttentionTensors tensors =
      with_index_arrays({run.inputs.q.data(), k.data(), v.data(), run.output.data()}, expanded);
  tensors.lse = run.lse.data();
  cpu_flash_backward(expanded, tensors, {run.grad_output.data(), dq.data(), dk.data(), dv.data()});
  // Each head's dK and dV, already rounded to the dtype, summed over the group and rounded again.
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
      for (std::int64_t g = 0; g < problem.kv_heads; ++g) {
        for (std::int64_t d = 0; d < dim; ++d) {
          float dk_sum = 0.0f, dv_sum = 0.0f;
          for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
            dk_sum += dtype_to_float(
                dk[expanded.k_row_offset(b, j) + h * expanded.k_strides.head + d], problem.dtype);
            dv_sum += dtype_to_float(
                dv[expanded.v_row_offset(b, j) + h * expanded.v_strides.head + d], problem.dtype);
          }
          run.dk[problem.k_row_offset(b, j) + g * problem.k_strides.head + d] =
              float_to_dtype(dk_sum, problem.dtype);
          run.dv[problem.v_row_offset(b, j) + g * problem.v_strides.head + d] =
              float_to_dtype(dv_sum, problem.dtype);
        }
      }
    }
  }
  std::string where;
  const double ratio = worst_bound_ratio(run, &where);
  if (ratio > 1.0) RC_LOG() << describe_case(c) << ": " << where << " ratio " << ratio;
  RC_ASSERT_FALSE(ratio > 1.0);
}

TEST(CpuFlashBackward, ABackwardWithoutTheRowsumTermIsFarOutsideTheBound) {
  // D_i = rowsum(dO * O) dropped is dS = P dP: handing the kernel O = 0 makes it so.
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 70;
  c.seq_len_k = 90;
  c.head_dim = 64;
  c.causal = true;
  BackwardRun run = prepare(c);
  run_backward(run);
  EXPECT_LE(worst_bound_ratio(run), 1.0);
  std::fill(run.output.begin(), run.output.end(), std::uint16_t{0});
  run_backward(run);
  EXPECT_GT(worst_bound_ratio(run), 10.0);
}

}  // namespace
}  // namespace attnfuzz
