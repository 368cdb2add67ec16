// SPDX-License-Identifier: BSD-3-Clause
// One backward case, as a harness hands it to a kernel: the inputs, dO drawn from the case's
// distribution (Q's draw of another seed, placed where O's rows lie), the float64 forward and
// gradients, O and the log-sum-exp rounded from the forward, and zeroed dQ, dK, dV
// buffers laid out as Q, K and V for a test to fill (by a kernel, or by hand).
#pragma once

#include <algorithm>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "oracle/backward_comparison.h"
#include "oracle/reference_attention.h"
#include "oracle/reference_backward.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {

struct BackwardFixture {
  AttentionProblem problem;
  AttentionInputs inputs;
  std::vector<std::uint16_t> output, grad_output, dq, dk, dv;
  std::vector<float> lse;
  ReferenceAttention forward;
  ReferenceGradients gradients;

  explicit BackwardFixture(AttentionCase c) {
    c.return_lse = true;
    problem = problem_of(c);
    inputs = generate_inputs(problem, c.data, c.seed);
    const AttentionInputs drawn = generate_inputs(problem, c.data, c.seed ^ 0x9e3779b97f4a7c15ull);
    const AttentionTensors drawn_tensors{drawn.q.data(), drawn.k.data(), drawn.v.data(), nullptr};
    forward = reference_attention(problem, tensors());
    output.assign(static_cast<std::size_t>(o_span(problem)), 0);
    grad_output.assign(output.size(), 0);
    lse.assign(static_cast<std::size_t>(lse_span(problem)), 0.0f);
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
        for (std::int64_t h = 0; h < problem.heads; ++h) {
          const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
          std::uint16_t* out = output_row(problem, output.data(), b, i, h);
          for (std::int64_t d = 0; d < problem.head_dim; ++d) {
            out[d] = round(forward.output[row * problem.head_dim + d]);
          }
          std::copy_n(query_row(problem, drawn_tensors, b, i, h), problem.head_dim,
                      output_row(problem, grad_output.data(), b, i, h));
          lse[problem.lse_offset(b, i, h)] = static_cast<float>(forward.log_sum_exp[row]);
        }
      }
    }
    gradients = reference_backward(problem, tensors(), grad_output.data());
    dq.assign(static_cast<std::size_t>(q_span(problem)), 0);
    dk.assign(static_cast<std::size_t>(k_span(problem)), 0);
    dv.assign(static_cast<std::size_t>(v_span(problem)), 0);
  }

  // The inputs and index arrays, O and the log-sum-exp: what a backward reads.
  AttentionTensors tensors() const {
    AttentionTensors tensors = with_index_arrays({inputs.q.data(), inputs.k.data(), inputs.v.data(),
                                                  const_cast<std::uint16_t*>(output.data())},
                                                 problem);
    tensors.lse = const_cast<float*>(lse.data());
    return tensors;
  }
  BackwardTensors backward_tensors() {
    return {grad_output.data(), dq.data(), dk.data(), dv.data()};
  }
  std::uint16_t round(double value) const {
    return float_to_dtype(static_cast<float>(value), problem.dtype);
  }
  std::uint16_t* dq_at(std::int64_t b, std::int64_t h, std::int64_t i) {
    return dq.data() + problem.q_row_offset(b, i) + h * problem.q_strides.head;
  }
  std::uint16_t* dk_at(std::int64_t b, std::int64_t g, std::int64_t j) {
    return dk.data() + problem.k_row_offset(b, j) + g * problem.k_strides.head;
  }
  std::uint16_t* dv_at(std::int64_t b, std::int64_t g, std::int64_t j) {
    return dv.data() + problem.v_row_offset(b, j) + g * problem.v_strides.head;
  }
  GradientComparison compare() const {
    return compare_gradients(problem, forward, gradients, dq.data(), dk.data(), dv.data());
  }
};

}  // namespace attnfuzz
