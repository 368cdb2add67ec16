// SPDX-License-Identifier: BSD-3-Clause
// The float64 backward oracle against the derivative itself: each element of dQ, dK and dV against
// a central difference of sum(dO * O), computed by a naive float64 forward that knows nothing of
// packing or strides, on every attention variant a backward runs (paged K/V is forward-only),
// with kv heads whole and split into parts; and its magnitudes against what they bound.
#include "oracle/reference_backward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "core/splitmix.h"
#include "oracle/tensor_rows.h"
#include "support/dense_case.h"

namespace attnfuzz {
namespace {

// The case's inputs as the naive forward reads them: compact [batch][seq][heads][dim] doubles of
// the dense shape (a packed or paged case draws its data in that shape, then moves it).
struct DenseInputs {
  std::vector<double> q, k, v, grad_output;
};

std::vector<double> widened(const std::vector<std::uint16_t>& values, Dtype dtype) {
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = dtype_to_float(values[i], dtype);
  return out;
}

// dO of the dense shape: values of a few units with both signs, exact in fp16 and bf16.
std::vector<std::uint16_t> draw_grad_output(const AttentionCase& c, std::uint64_t seed) {
  std::vector<std::uint16_t> values(
      static_cast<std::size_t>(c.batch * c.seq_len_q * c.heads * c.head_dim));
  for (std::size_t index = 0; index < values.size(); ++index) {
    std::uint16_t& value = values[index];
    const double drawn =
        static_cast<double>(splitmix64_step(seed + index * kSplitMix64Gamma) % 65) / 16.0 - 2.0;
    value = float_to_dtype(static_cast<float>(drawn), c.dtype);
  }
  return values;
}

// sum(dO * O) by the definition, row by row, over the dense doubles.
double naive_loss(const AttentionCase& c, const DenseInputs& in) {
  const std::int64_t dim = c.head_dim;
  const std::vector<float> slopes = alibi_slopes_for(c.heads);
  double loss = 0.0;
  for (std::int64_t b = 0; b < c.batch; ++b) {
    const std::int64_t seq_q = c.seq_lens_q.empty() ? c.seq_len_q : c.seq_lens_q[b];
    const std::int64_t seq_k = c.seq_lens_k.empty() ? c.seq_len_k : c.seq_lens_k[b];
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::int64_t kv = h / (c.heads / c.kv_heads);
      for (std::int64_t i = 0; i < seq_q; ++i) {
        const auto q_at = [&](std::int64_t d) {
          return in.q[static_cast<std::size_t>(((b * c.seq_len_q + i) * c.heads + h) * dim + d)];
        };
        const auto kv_at = [&](const std::vector<double>& t, std::int64_t j, std::int64_t d) {
          return t[static_cast<std::size_t>(((b * c.seq_len_k + j) * c.kv_heads + kv) * dim + d)];
        };
        std::vector<double> scores;
        std::vector<std::int64_t> keys;
        const std::int64_t diagonal = i + seq_k - seq_q;
        for (std::int64_t j = 0; j < seq_k; ++j) {
          if (c.causal && j > diagonal) continue;
          if (c.window_right >= 0 && j > diagonal + c.window_right) continue;
          if (c.window_left >= 0 && j < diagonal - c.window_left) continue;
          double dot = 0.0;
          for (std::int64_t d = 0; d < dim; ++d) dot += q_at(d) * kv_at(in.k, j, d);
          double score = dot * effective_softmax_scale(c);
          if (c.softcap > 0.0) score = c.softcap * std::tanh(score / c.softcap);
          if (c.alibi) score -= static_cast<double>(slopes[h]) * std::fabs(double(diagonal - j));
          scores.push_back(score);
          keys.push_back(j);
        }
        if (scores.empty()) continue;
        double max = scores[0];
        for (double score : scores) max = std::max(max, score);
        double sum = 0.0;
        for (double& score : scores) sum += (score = std::exp(score - max));
        for (std::int64_t d = 0; d < dim; ++d) {
          double out = 0.0;
          for (std::size_t n = 0; n < keys.size(); ++n)
            out += scores[n] / sum * kv_at(in.v, keys[n], d);
          loss += out * in.grad_output[static_cast<std::size_t>(
                            ((b * c.seq_len_q + i) * c.heads + h) * dim + d)];
        }
      }
    }
  }
  return loss;
}

// d loss / d tensor[index], by a central difference.
double central_difference(const AttentionCase& c, DenseInputs& in, std::vector<double>& tensor,
                          std::size_t index) {
  const double kept = tensor[index];
  const double step = 1e-5 * std::max(1.0, std::fabs(kept));
  tensor[index] = kept + step;
  const double above = naive_loss(c, in);
  tensor[index] = kept - step;
  const double below = naive_loss(c, in);
  tensor[index] = kept;
  return (above - below) / (2.0 * step);
}

void expect_gradients_match(const AttentionCase& c, const AttentionProblem& problem,
                            const AttentionInputs& inputs, const AttentionInputs& dense_inputs,
                            const std::vector<std::uint16_t>& dense_grad_output,
                            const std::vector<std::uint16_t>& grad_output, int threads);

// Every gradient element of the oracle against the central difference of its dense twin, within
// 1e-6 of the element's magnitude (the difference's own error is ~1e-10 of the loss's scale), and
// every magnitude at least the gradient it scales.
void expect_gradients_match_differences(const AttentionCase& c) {
  SCOPED_TRACE(describe_case(c));
  const AttentionProblem problem = problem_of(c);
  const AttentionInputs inputs = generate_inputs(problem, c.data, c.seed);
  const AttentionCase dense_case = dense_version(c);
  const AttentionProblem dense = problem_of(dense_case);
  const AttentionInputs dense_inputs = generate_inputs(dense, c.data, c.seed);
  const std::vector<std::uint16_t> dense_grad_output = draw_grad_output(c, c.seed + 1);

  // dO placed where the problem's O rows lie (packed, strided), rows past a sequence's end unread.
  std::vector<std::uint16_t> grad_output(static_cast<std::size_t>(o_span(problem)), 0);
  for (std::int64_t b = 0; b < c.batch; ++b) {
    for (std::int64_t i = 0; i < problem.seq_len_q_of(b); ++i) {
      for (std::int64_t h = 0; h < c.heads; ++h) {
        std::uint16_t* row = output_row(problem, grad_output.data(), b, i, h);
        for (std::int64_t d = 0; d < c.head_dim; ++d) {
          row[d] = dense_grad_output[static_cast<std::size_t>(
              ((b * c.seq_len_q + i) * c.heads + h) * c.head_dim + d)];
        }
      }
    }
  }
  // One thread: one item per kv head; eight: kv heads split into parts, whatever the machine.
  for (const int threads : {1, 8}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    expect_gradients_match(c, problem, inputs, dense_inputs, dense_grad_output, grad_output,
                           threads);
  }
}

void expect_gradients_match(const AttentionCase& c, const AttentionProblem& problem,
                            const AttentionInputs& inputs, const AttentionInputs& dense_inputs,
                            const std::vector<std::uint16_t>& dense_grad_output,
                            const std::vector<std::uint16_t>& grad_output, int threads) {
  const ReferenceGradients gradients =
      reference_backward(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr},
                         grad_output.data(), threads);

  DenseInputs in{widened(dense_inputs.q, c.dtype), widened(dense_inputs.k, c.dtype),
                 widened(dense_inputs.v, c.dtype), widened(dense_grad_output, c.dtype)};
  const double loss_scale = std::fabs(naive_loss(c, in)) + 1.0;
  struct Checked {
    const char* name;
    std::vector<double>& tensor;
    const LargeBuffer<double>& gradient;
    const LargeBuffer<double>& magnitude;
    std::int64_t seq_len, heads;
  };
  Checked checked[] = {
      {"dQ", in.q, gradients.dq, gradients.dq_magnitude, c.seq_len_q, c.heads},
      {"dK", in.k, gradients.dk, gradients.dk_magnitude, c.seq_len_k, c.kv_heads},
      {"dV", in.v, gradients.dv, gradients.dv_magnitude, c.seq_len_k, c.kv_heads},
  };
  for (Checked& tensor : checked) {
    ASSERT_EQ(tensor.gradient.size(),
              static_cast<std::size_t>(c.batch * tensor.heads * tensor.seq_len * c.head_dim))
        << tensor.name;
    for (std::int64_t b = 0; b < c.batch; ++b) {
      for (std::int64_t s = 0; s < tensor.seq_len; ++s) {
        for (std::int64_t h = 0; h < tensor.heads; ++h) {
          for (std::int64_t d = 0; d < c.head_dim; ++d) {
            // The dense input's index, and the oracle's compact [batch][heads][seq][dim] one.
            const auto at = static_cast<std::size_t>(
                ((b * tensor.seq_len + s) * tensor.heads + h) * c.head_dim + d);
            const auto compact = static_cast<std::size_t>(
                ((b * tensor.heads + h) * tensor.seq_len + s) * c.head_dim + d);
            const double expected = central_difference(c, in, tensor.tensor, at);
            const double got = tensor.gradient[compact];
            ASSERT_NEAR(got, expected, 1e-6 * tensor.magnitude[compact] + 1e-9 * loss_scale)
                << tensor.name << "[" << b << "," << s << "," << h << "," << d << "]";
            ASSERT_GE(tensor.magnitude[compact], std::fabs(got) * (1.0 - 1e-12))
                << tensor.name << " magnitude [" << b << "," << s << "," << h << "," << d << "]";
          }
        }
      }
    }
  }
  for (std::size_t row = 0; row < gradients.output_dot.size(); ++row) {
    ASSERT_GE(gradients.gradient_scale[row], std::fabs(gradients.output_dot[row]) * (1.0 - 1e-12));
  }
}

AttentionCase small_case() {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 5;
  c.seq_len_k = 7;
  c.head_dim = 8;
  c.seed = 11;
  return c;
}

TEST(ReferenceBackward, DenseGradientsAreTheDerivativeOfTheLoss) {
  AttentionCase c = small_case();
  expect_gradients_match_differences(c);
  c.dtype = Dtype::bf16;
  c.layout = Layout::bhsd;
  c.row_padding = 3;
  expect_gradients_match_differences(c);
  c.kv_heads = 1;  // MQA: one kv head sums all four heads' contributions
  expect_gradients_match_differences(c);
}

TEST(ReferenceBackward, MaskedKeysAndRowsThatSeeNoKeyHaveNoGradient) {
  AttentionCase c = small_case();
  c.causal = true;
  expect_gradients_match_differences(c);
  c.seq_len_q = 9;  // more queries than keys: the first rows see none
  expect_gradients_match_differences(c);
  c.window_left = 2;
  c.window_right = 1;
  expect_gradients_match_differences(c);
  c.causal = false;
  expect_gradients_match_differences(c);
}

TEST(ReferenceBackward, SoftcapAndAlibiEnterTheGradient) {
  AttentionCase c = small_case();
  c.softcap = 2.0;
  c.data = DataDistribution::large_scores;  // tanh well into its flat part
  expect_gradients_match_differences(c);
  c.alibi = true;
  c.causal = true;
  expect_gradients_match_differences(c);
  c.softcap = 0.0;
  c.causal = false;
  expect_gradients_match_differences(c);
}

TEST(ReferenceBackward, PackedSequencesAreDifferentiatedOneByOne) {
  AttentionCase c = small_case();
  c.batch = 3;
  c.seq_lens_q = {5, 0, 2};
  c.seq_lens_k = {7, 3, 0};
  expect_gradients_match_differences(c);
  c.causal = true;
  expect_gradients_match_differences(c);
}

TEST(ReferenceBackward, OneKeyPassesTheOutputGradientToVAndNoneToQOrK) {
  // P = 1 for the only key: dV = dO, and dS = P (dP - D) = dO.V - dO.V = 0.
  AttentionCase c = small_case();
  c.seq_len_k = 1;
  const AttentionProblem problem = problem_of(c);
  const AttentionInputs inputs = generate_inputs(problem, c.data, c.seed);
  const std::vector<std::uint16_t> grad_output = draw_grad_output(c, 3);
  const ReferenceGradients gradients = reference_backward(
      problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr}, grad_output.data());
  for (double value : gradients.dq) EXPECT_NEAR(value, 0.0, 1e-12);
  for (double value : gradients.dk) EXPECT_NEAR(value, 0.0, 1e-12);
  // kv head 0 of batch 0 gathers query heads 0 and 1 of every row: one key, so dV = their sum.
  for (std::int64_t d = 0; d < c.head_dim; ++d) {
    double expected = 0.0;
    for (std::int64_t i = 0; i < c.seq_len_q; ++i) {
      for (std::int64_t h = 0; h < 2; ++h) {
        expected += dtype_to_float(
            grad_output[static_cast<std::size_t>((i * c.heads + h) * c.head_dim + d)], c.dtype);
      }
    }
    EXPECT_NEAR(gradients.dv[static_cast<std::size_t>(d)], expected, 1e-12);
  }
}

TEST(ReferenceBackward, AKvHeadSplitIntoPartsForIdleThreadsGivesTheSameGradients) {
  // One thread: one item per kv head. Eight: each kv head split into parts whose dK and dV are
  // added up afterwards, in part order, so that every run gives the same bits.
  AttentionCase c = small_case();
  c.batch = 1;
  c.kv_heads = 2;
  c.seq_len_q = 300;  // three blocks of rows per query head
  c.seq_len_k = 200;
  c.causal = true;
  const AttentionProblem problem = problem_of(c);
  const AttentionInputs inputs = generate_inputs(problem, c.data, c.seed);
  const std::vector<std::uint16_t> grad_output = draw_grad_output(c, 5);
  const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
  const ReferenceGradients whole = reference_backward(problem, tensors, grad_output.data(), 1);
  const ReferenceGradients parts = reference_backward(problem, tensors, grad_output.data(), 8);
  const ReferenceGradients again = reference_backward(problem, tensors, grad_output.data(), 8);
  const std::pair<const LargeBuffer<double>*, const LargeBuffer<double>*> compared[] = {
      {&whole.dq, &parts.dq},
      {&whole.dk, &parts.dk},
      {&whole.dv, &parts.dv},
      {&whole.dq_magnitude, &parts.dq_magnitude},
      {&whole.dk_magnitude, &parts.dk_magnitude},
      {&whole.dv_magnitude, &parts.dv_magnitude},
      {&whole.key_abs_sum, &parts.key_abs_sum},
      {&whole.query_abs_sum, &parts.query_abs_sum},
      {&whole.grad_output_abs_sum, &parts.grad_output_abs_sum},
      {&whole.output_dot, &parts.output_dot},
      {&whole.gradient_scale, &parts.gradient_scale},
      {&whole.largest_weight, &parts.largest_weight}};
  for (const auto& [one, other] : compared) {
    ASSERT_EQ(one->size(), other->size());
    for (std::size_t index = 0; index < one->size(); ++index) {
      ASSERT_NEAR((*one)[index], (*other)[index], 1e-12 * (1.0 + std::fabs((*one)[index])));
    }
  }
  EXPECT_TRUE(std::equal(parts.dk.begin(), parts.dk.end(), again.dk.begin()));
  EXPECT_TRUE(std::equal(parts.dv.begin(), parts.dv.end(), again.dv.begin()));
}

}  // namespace
}  // namespace attnfuzz
