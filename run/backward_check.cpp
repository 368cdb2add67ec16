// SPDX-License-Identifier: BSD-3-Clause
#include "run/backward_check.h"

#include <algorithm>
#include <exception>

#include "oracle/tensor_rows.h"
#include "run/kernel_inputs.h"

namespace attnfuzz {
namespace {

AttentionProblem problem_returning_lse(AttentionCase attention_case) {
  attention_case.return_lse = true;
  return problem_of(attention_case);
}

}  // namespace

BackwardCase::BackwardCase(const AttentionCase& attention_case)
    : problem(problem_returning_lse(attention_case)),
      inputs(generate_inputs(problem, attention_case.data, attention_case.seed,
                             attention_case.injection)) {
  const AttentionInputs drawn =
      generate_inputs(problem, attention_case.data, attention_case.seed ^ kGradOutputSeed);
  const AttentionTensors drawn_tensors{drawn.q.data(), drawn.k.data(), drawn.v.data(), nullptr};
  // The oracles read the inputs and index arrays alone.
  const AttentionTensors original =
      with_index_arrays({inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr}, problem);
  forward = reference_attention(problem, original);
  output.assign(static_cast<std::size_t>(o_span(problem)), 0);
  grad_output.assign(output.size(), 0);
  lse.assign(static_cast<std::size_t>(lse_span(problem)), 0.0f);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      for (std::int64_t h = 0; h < problem.heads; ++h) {
        const std::int64_t row = (b * problem.heads + h) * problem.seq_len_q + i;
        std::uint16_t* out = output_row(problem, output.data(), b, i, h);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          out[d] = float_to_dtype(static_cast<float>(forward.output[row * problem.head_dim + d]),
                                  problem.dtype);
        }
        std::copy_n(query_row(problem, drawn_tensors, b, i, h), problem.head_dim,
                    output_row(problem, grad_output.data(), b, i, h));
        lse[problem.lse_offset(b, i, h)] = static_cast<float>(forward.log_sum_exp[row]);
      }
    }
  }
  gradients = reference_backward(problem, original, grad_output.data());
}

AttentionTensors BackwardCase::tensors() const {
  AttentionTensors tensors = with_index_arrays({inputs.q.data(), inputs.k.data(), inputs.v.data(),
                                                const_cast<std::uint16_t*>(output.data())},
                                               problem);
  tensors.lse = const_cast<float*>(lse.data());
  return tensors;
}

BackwardCheck check_backward(const AttentionKernel& kernel, const AttentionCase& attention_case,
                             PlantedBug plant) {
  const BackwardCase backward_case(attention_case);
  const AttentionProblem& problem = backward_case.problem;
  const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
  std::vector<std::uint16_t> dq(static_cast<std::size_t>(q_span(problem)), poison);
  std::vector<std::uint16_t> dk(static_cast<std::size_t>(k_span(problem)), poison);
  std::vector<std::uint16_t> dv(static_cast<std::size_t>(v_span(problem)), poison);
  // The kernel reads its own copies of the inputs, and O, the log-sum-exp and dO (which it may not
  // change either: nothing checks that yet) from the case.
  const KernelInputs handed = KernelInputs::copy_of(problem, backward_case.inputs);
  std::vector<std::uint16_t> output = backward_case.output;
  std::vector<float> lse = backward_case.lse;
  BackwardCheck check;
  try {
    kernel.backward(problem, handed.bind(output.data(), lse.data()),
                    {backward_case.grad_output.data(), dq.data(), dk.data(), dv.data()}, plant);
  } catch (const std::exception& error) {
    check.error = error.what();
    return check;
  }
  check.comparison = compare_gradients(problem, backward_case.forward, backward_case.gradients,
                                       dq.data(), dk.data(), dv.data());
  return check;
}

}  // namespace attnfuzz
