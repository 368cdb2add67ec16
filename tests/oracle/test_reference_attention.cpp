// SPDX-License-Identifier: BSD-3-Clause
// The float64 oracle against cases computed by hand and against a naive float64 triple loop.
#include "oracle/reference_attention.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "case/data_distribution.h"
#include "fuzz/case_generator.h"

namespace attnfuzz {
namespace {

// Tensors written value by value, BSHD contiguous, for hand-computed cases.
struct HandTensors {
  AttentionProblem problem;
  std::vector<std::uint16_t> q, k, v;

  explicit HandTensors(AttentionProblem shape) : problem(with_layout(shape, Layout::bshd, 0)) {
    q.resize(problem.batch * problem.seq_len_q * problem.heads * problem.head_dim);
    k.resize(problem.batch * problem.seq_len_k * problem.kv_heads * problem.head_dim);
    v.resize(k.size());
  }
  static void set(std::vector<std::uint16_t>& tensor, std::int64_t index, float value) {
    tensor[index] = float_to_fp16(value);
  }
  ReferenceAttention reference() const {
    return reference_attention(problem, {q.data(), k.data(), v.data(), nullptr});
  }
};

AttentionProblem shape(std::int64_t heads, std::int64_t kv_heads, std::int64_t seq_len_q,
                       std::int64_t seq_len_k, std::int64_t head_dim, bool causal) {
  AttentionProblem problem;
  problem.heads = heads;
  problem.kv_heads = kv_heads;
  problem.seq_len_q = seq_len_q;
  problem.seq_len_k = seq_len_k;
  problem.head_dim = head_dim;
  problem.causal = causal;
  problem.softmax_scale = 1.0;
  return problem;
}

TEST(ReferenceAttention, TwoKeysGiveTheHandComputedSoftmaxAverage) {
  // q = [1, 0]; k0 = [0, 0], k1 = [1, 0]: scores 0 and 1, so p = [1, e] / (1 + e).
  HandTensors tensors(shape(1, 1, 1, 2, 2, false));
  HandTensors::set(tensors.q, 0, 1.0f);
  HandTensors::set(tensors.k, 2, 1.0f);
  for (int index = 0; index < 4; ++index) HandTensors::set(tensors.v, index, 1.0f + index);
  const ReferenceAttention reference = tensors.reference();
  const double e = std::exp(1.0);
  const double p0 = 1.0 / (1.0 + e), p1 = e / (1.0 + e);
  EXPECT_NEAR(reference.output[0], p0 * 1.0 + p1 * 3.0, 1e-15);
  EXPECT_NEAR(reference.output[1], p0 * 2.0 + p1 * 4.0, 1e-15);
  EXPECT_NEAR(reference.inverse_row_sum[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_DOUBLE_EQ(reference.value_abs_sum[0], 1.0 + 3.0);
}

TEST(ReferenceAttention, CausalFirstRowSeesOnlyTheFirstKey) {
  HandTensors tensors(shape(1, 1, 2, 2, 2, true));
  for (int index = 0; index < 4; ++index) {
    HandTensors::set(tensors.q, index, 0.5f);
    HandTensors::set(tensors.k, index, -0.25f * index);
    HandTensors::set(tensors.v, index, 10.0f + index);
  }
  const ReferenceAttention reference = tensors.reference();
  EXPECT_EQ(reference.output[0], 10.0);
  EXPECT_EQ(reference.output[1], 11.0);
  EXPECT_NE(reference.output[2], 12.0);  // the second row averages both keys
}

TEST(ReferenceAttention, RowsThatSeeNoKeyGiveZeroAndAZeroBound) {
  // Causal, bottom-right aligned, 3 queries over 1 key: rows 0 and 1 see nothing, row 2 sees key 0.
  HandTensors tensors(shape(1, 1, 3, 1, 2, true));
  HandTensors::set(tensors.v, 0, 7.0f);
  HandTensors::set(tensors.v, 1, -7.0f);
  const ReferenceAttention reference = tensors.reference();
  for (int element = 0; element < 4; ++element) {
    EXPECT_EQ(reference.output[element], 0.0);
    EXPECT_EQ(reference.magnitude[element], 0.0);
  }
  EXPECT_EQ(reference.inverse_row_sum[0], 0.0);
  EXPECT_EQ(reference.output[4], 7.0);
  EXPECT_EQ(reference.output[5], -7.0);
}

TEST(ReferenceAttention, GroupedQueryHeadsShareTheirKeyValueHead) {
  // 4 query heads over 2 kv heads: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
  HandTensors tensors(shape(4, 2, 1, 1, 2, false));
  for (int d = 0; d < 2; ++d) {
    HandTensors::set(tensors.v, 0 * 2 + d, 1.0f);
    HandTensors::set(tensors.v, 1 * 2 + d, 2.0f);
  }
  const ReferenceAttention reference = tensors.reference();
  const double expected[] = {1, 1, 1, 1, 2, 2, 2, 2};
  for (int element = 0; element < 8; ++element) {
    EXPECT_EQ(reference.output[element], expected[element]) << element;
  }
}

// ---- against a naive triple loop ----

struct NaiveAttention {
  std::vector<double> output, magnitude, inverse_row_sum;
};

NaiveAttention naive_attention(const AttentionProblem& problem, const AttentionInputs& inputs) {
  auto at = [&](const std::vector<std::uint16_t>& tensor, const TensorStrides& strides,
                std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    return static_cast<double>(dtype_to_float(
        tensor[b * strides.batch + s * strides.seq + h * strides.head + d], problem.dtype));
  };
  NaiveAttention naive;
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t h = 0; h < problem.heads; ++h) {
      const std::int64_t kv = h / problem.group_size();
      for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
        const std::int64_t visible = problem.last_visible_key(i) + 1;
        std::vector<double> scores(visible);
        double row_max = -INFINITY;
        for (std::int64_t j = 0; j < visible; ++j) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < problem.head_dim; ++d) {
            dot += at(inputs.q, problem.q_strides, b, i, h, d) *
                   at(inputs.k, problem.k_strides, b, j, kv, d);
          }
          scores[j] = dot * problem.softmax_scale;
          row_max = std::max(row_max, scores[j]);
        }
        double row_sum = 0.0;
        for (double& score : scores) row_sum += (score = std::exp(score - row_max));
        naive.inverse_row_sum.push_back(visible ? 1.0 / row_sum : 0.0);
        for (std::int64_t d = 0; d < problem.head_dim; ++d) {
          double out = 0.0, magnitude = 0.0;
          for (std::int64_t j = 0; j < visible; ++j) {
            const double value = at(inputs.v, problem.v_strides, b, j, kv, d);
            out += scores[j] / row_sum * value;
            magnitude += scores[j] / row_sum * std::fabs(value);
          }
          naive.output.push_back(out);
          naive.magnitude.push_back(magnitude);
        }
      }
    }
  }
  return naive;
}

RC_GTEST_PROP(ReferenceAttention, AgreesWithANaiveTripleLoopToFloat64Precision, ()) {
  const AttentionCase attention_case =
      *small_case({.max_seq_len = 80, .distributions = {}, .injections = true});
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, attention_case.data, attention_case.seed);
  const ReferenceAttention reference =
      reference_attention(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr});
  const NaiveAttention naive = naive_attention(problem, inputs);
  RC_ASSERT(reference.output.size() == naive.output.size());
  const double excess = magnitude_excess(problem.seq_len_k);
  const double slack = magnitude_underflow_slack(
      *std::max_element(reference.value_abs_sum.begin(), reference.value_abs_sum.end()),
      problem.seq_len_k);
  for (std::size_t index = 0; index < naive.output.size(); ++index) {
    // Both outputs are float64 sums of at most a few hundred terms: they agree to ~1e-13 of the
    // scale of the terms (the magnitude), far below any fp16/bf16 error.
    const double scale = naive.magnitude[index] + 1e-300;
    RC_ASSERT(std::fabs(reference.output[index] - naive.output[index]) <= 1e-12 * scale);
    // The magnitude is a float sum rounded up to a bound: never below A, at most `excess` above.
    RC_ASSERT(reference.magnitude[index] >= naive.magnitude[index] * (1.0 - 1e-12));
    RC_ASSERT(reference.magnitude[index] <=
              naive.magnitude[index] * excess * (1.0 + 1e-12) + slack);
  }
  for (std::size_t row = 0; row < naive.inverse_row_sum.size(); ++row) {
    RC_ASSERT(std::fabs(reference.inverse_row_sum[row] - naive.inverse_row_sum[row]) <=
              1e-12 * naive.inverse_row_sum[row]);
  }
}

// Rows longer than one SGEMM chunk (4096 keys) are summed in two float chunks added in double:
// the magnitude still lies between A and A * magnitude_excess, an excess of at most 0.06%.
TEST(ReferenceAttention, TheMagnitudeOfRowsLongerThanOneChunkLiesBetweenAAndItsExcess) {
  AttentionCase attention_case;
  attention_case.heads = attention_case.kv_heads = 2;
  attention_case.seq_len_q = 64;
  attention_case.seq_len_k = 5000;  // two SGEMM chunks
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 3);
  const ReferenceAttention reference =
      reference_attention(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr});
  const NaiveAttention naive = naive_attention(problem, inputs);
  const double excess = magnitude_excess(problem.seq_len_k);
  EXPECT_GT(excess, 1.0);
  EXPECT_LT(excess, 1.0006);
  double worst_excess = 0.0;
  for (std::size_t index = 0; index < naive.magnitude.size(); ++index) {
    ASSERT_GE(reference.magnitude[index], naive.magnitude[index]) << index;
    worst_excess = std::max(worst_excess, reference.magnitude[index] / naive.magnitude[index]);
  }
  EXPECT_LE(worst_excess, excess);
}

// The oracle writes every element, so a caller may hand it the last case's buffers: poison every
// element and none of the poison may survive. Shapes include whole row blocks that see no key
// (causal, seq_len_q far above seq_len_k), GQA and MQA, and magnitudes summed in two chunks.
TEST(ReferenceAttention, WritesEveryElementSoBuffersCanBeReused) {
  struct Shape {
    std::int64_t batch, heads, kv_heads, seq_len_q, seq_len_k, head_dim;
    bool causal;
  };
  const Shape shapes[] = {{1, 2, 1, 300, 10, 32, true},
                          {2, 6, 2, 130, 77, 64, true},
                          {3, 3, 3, 17, 1025, 16, false},
                          {2, 4, 1, 513, 513, 8, true},
                          {1, 1, 1, 1, 1, 8, false}};
  ReferenceAttention reference;
  for (const Shape& shape : shapes) {
    AttentionCase attention_case;
    attention_case.batch = shape.batch;
    attention_case.heads = shape.heads;
    attention_case.kv_heads = shape.kv_heads;
    attention_case.seq_len_q = shape.seq_len_q;
    attention_case.seq_len_k = shape.seq_len_k;
    attention_case.head_dim = shape.head_dim;
    attention_case.causal = shape.causal;
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 5);
    const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
    const ReferenceAttention fresh = reference_attention(problem, tensors);
    reference.output.assign(fresh.output.size(), std::nan(""));
    reference.magnitude.assign(fresh.magnitude.size(), std::nan(""));
    reference.inverse_row_sum.assign(fresh.inverse_row_sum.size(), std::nan(""));
    reference.score_scale.assign(fresh.score_scale.size(), std::nan(""));
    reference.value_abs_sum.assign(fresh.value_abs_sum.size(), std::nan(""));
    reference_attention(problem, tensors, reference);
    const std::string shape_name = describe_shape(problem);
    ASSERT_EQ(reference.output.size(), fresh.output.size()) << shape_name;
    for (std::size_t i = 0; i < fresh.output.size(); ++i) {
      ASSERT_EQ(reference.output[i], fresh.output[i]) << shape_name << ", element " << i;
      ASSERT_EQ(reference.magnitude[i], fresh.magnitude[i]) << shape_name << ", element " << i;
    }
    for (std::size_t row = 0; row < fresh.inverse_row_sum.size(); ++row) {
      ASSERT_EQ(reference.inverse_row_sum[row], fresh.inverse_row_sum[row]) << shape_name;
      ASSERT_EQ(reference.score_scale[row], fresh.score_scale[row]) << shape_name;
    }
    ASSERT_EQ(reference.value_abs_sum.size(), fresh.value_abs_sum.size()) << shape_name;
    for (std::size_t i = 0; i < fresh.value_abs_sum.size(); ++i) {
      ASSERT_EQ(reference.value_abs_sum[i], fresh.value_abs_sum[i]) << shape_name;
    }
  }
}

}  // namespace
}  // namespace attnfuzz
