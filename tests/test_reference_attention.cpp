// The float64 oracle against cases computed by hand and against a naive float64 triple loop.
#include "oracle/reference_attention.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

#include "fuzz/data_distribution.h"
#include "support/case_generator.h"

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
      *testing::small_case({.max_seq_len = 80, .distributions = {}, .injections = true});
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, attention_case.data, attention_case.seed);
  const ReferenceAttention reference =
      reference_attention(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr});
  const NaiveAttention naive = naive_attention(problem, inputs);
  RC_ASSERT(reference.output.size() == naive.output.size());
  for (std::size_t index = 0; index < naive.output.size(); ++index) {
    // Both are float64 sums of at most a few hundred terms: they agree to ~1e-13 of the scale
    // of the terms (the magnitude), far below any fp16/bf16 error.
    const double scale = naive.magnitude[index] + 1e-300;
    RC_ASSERT(std::fabs(reference.output[index] - naive.output[index]) <= 1e-12 * scale);
    RC_ASSERT(std::fabs(reference.magnitude[index] - naive.magnitude[index]) <= 1e-12 * scale);
  }
  for (std::size_t row = 0; row < naive.inverse_row_sum.size(); ++row) {
    RC_ASSERT(std::fabs(reference.inverse_row_sum[row] - naive.inverse_row_sum[row]) <=
              1e-12 * naive.inverse_row_sum[row]);
  }
}

}  // namespace
}  // namespace attnfuzz
