// SPDX-License-Identifier: BSD-3-Clause
// The float64 oracle against cases computed by hand and against a naive float64 triple loop.
#include "oracle/reference_attention.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "fuzz/case_generator.h"
#include "support/dense_case.h"

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
        const std::int64_t visible = std::max<std::int64_t>(problem.visible_keys_of(0, i).end, 0);
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

// ---- the attention variants, against a naive loop that knows nothing of packing or pages ----

namespace variants {

// FlashAttention's definitions written out once more, plainly: the keys query i of a sequence of
// seq_q queries and seq_k keys sees, and its score's soft cap and ALiBi bias.
bool sees(const AttentionCase& c, std::int64_t i, std::int64_t j, std::int64_t seq_q,
          std::int64_t seq_k) {
  const std::int64_t diagonal = i + seq_k - seq_q;
  if (j >= seq_k) return false;
  if (c.causal && j > diagonal) return false;
  if (c.window_right >= 0 && j > diagonal + c.window_right) return false;
  if (c.window_left >= 0 && j < diagonal - c.window_left) return false;
  return true;
}

struct NaiveRow {
  std::vector<double> output;
  double log_sum_exp = -INFINITY;
};

// Row i of head h of sequence b, from the dense inputs of the same case without packing or pages
// (the data a varlen or paged case draws in that shape and then moves).
NaiveRow naive_row(const AttentionCase& c, const AttentionProblem& dense,
                   const AttentionInputs& inputs, std::int64_t b, std::int64_t h, std::int64_t i) {
  const std::int64_t seq_q = c.seq_lens_q.empty() ? c.seq_len_q : c.seq_lens_q[b];
  const std::int64_t seq_k = c.seq_lens_k.empty() ? c.seq_len_k : c.seq_lens_k[b];
  const std::int64_t dim = c.head_dim;
  const std::int64_t kv = h / (c.heads / c.kv_heads);
  // Element [b, s, head, d] of a compact BSHD tensor of `rows` rows per sequence.
  const auto element = [&](const std::vector<std::uint16_t>& tensor, std::int64_t rows,
                           std::int64_t s, std::int64_t head, std::int64_t heads, std::int64_t d) {
    const auto at = static_cast<std::size_t>(((b * rows + s) * heads + head) * dim + d);
    return static_cast<double>(dtype_to_float(tensor[at], c.dtype));
  };
  const std::vector<float> slopes = alibi_slopes_for(c.heads);
  std::vector<double> scores;
  std::vector<std::int64_t> keys;
  for (std::int64_t j = 0; j < seq_k; ++j) {
    if (!sees(c, i, j, seq_q, seq_k)) continue;
    double dot = 0.0;
    for (std::int64_t d = 0; d < dim; ++d) {
      dot += element(inputs.q, dense.seq_len_q, i, h, c.heads, d) *
             element(inputs.k, dense.seq_len_k, j, kv, c.kv_heads, d);
    }
    double score = dot * effective_softmax_scale(c);
    if (c.softcap > 0.0) score = c.softcap * std::tanh(score / c.softcap);
    if (c.alibi) score -= static_cast<double>(slopes[h]) * std::fabs(double(i + seq_k - seq_q - j));
    scores.push_back(score);
    keys.push_back(j);
  }
  NaiveRow row;
  row.output.assign(static_cast<std::size_t>(dim), 0.0);
  if (scores.empty()) return row;
  const double max = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (double& score : scores) sum += (score = std::exp(score - max));
  row.log_sum_exp = max + std::log(sum);
  for (std::size_t n = 0; n < keys.size(); ++n) {
    for (std::int64_t d = 0; d < dim; ++d) {
      row.output[d] +=
          scores[n] / sum * element(inputs.v, dense.seq_len_k, keys[n], kv, c.kv_heads, d);
    }
  }
  return row;
}

// The oracle's output, log-sum-exp and rows past each sequence's end against the naive loop.
void expect_matches_naive(const AttentionCase& c) {
  const AttentionProblem problem = problem_of(c);
  const AttentionInputs inputs = generate_inputs(problem, c.data, c.seed, c.injection);
  const ReferenceAttention reference =
      reference_attention(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr});
  const AttentionCase dense_case = dense_version(c);
  const AttentionProblem dense = problem_of(dense_case);
  const AttentionInputs dense_inputs = generate_inputs(dense, c.data, c.seed, c.injection);
  for (std::int64_t b = 0; b < c.batch; ++b) {
    for (std::int64_t h = 0; h < c.heads; ++h) {
      for (std::int64_t i = 0; i < c.seq_len_q; ++i) {
        const std::int64_t row_index = (b * c.heads + h) * c.seq_len_q + i;
        const bool exists = c.seq_lens_q.empty() || i < c.seq_lens_q[b];
        const NaiveRow naive = exists ? naive_row(c, dense, dense_inputs, b, h, i) : NaiveRow{};
        if (exists && std::isinf(naive.log_sum_exp)) {
          EXPECT_EQ(reference.log_sum_exp[row_index], naive.log_sum_exp);
        } else if (exists) {
          EXPECT_NEAR(reference.log_sum_exp[row_index], naive.log_sum_exp,
                      1e-9 * (1.0 + std::fabs(naive.log_sum_exp)))
              << describe_case(c) << " row " << b << "," << h << "," << i;
        }
        for (std::int64_t d = 0; d < c.head_dim; ++d) {
          const double expected = exists ? naive.output[d] : 0.0;
          ASSERT_NEAR(reference.output[row_index * c.head_dim + d], expected,
                      1e-9 * (1.0 + std::fabs(expected)))
              << describe_case(c) << " element " << b << "," << h << "," << i << "," << d;
        }
      }
    }
  }
}

}  // namespace variants

TEST(ReferenceAttention, SlidingWindowsSoftcapAlibiAndLogSumExpMatchANaiveLoop) {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.seq_len_q = 37;
  c.seq_len_k = 53;
  c.head_dim = 32;
  c.window_left = 5;
  c.window_right = 2;
  variants::expect_matches_naive(c);
  c.causal = true;  // caps the right side at the diagonal
  variants::expect_matches_naive(c);
  c.window_right = -1;
  c.softcap = 3.0;
  c.data = DataDistribution::large_scores;
  variants::expect_matches_naive(c);
  c.alibi = true;
  c.window_left = -1;
  variants::expect_matches_naive(c);
  c.causal = false;
  c.seq_len_q = 60;  // more queries than keys: ALiBi's distance from the shifted diagonal
  variants::expect_matches_naive(c);
}

TEST(ReferenceAttention, PackedAndPagedCasesMatchTheNaiveLoopOnTheirDenseData) {
  AttentionCase c;
  c.batch = 4;
  c.heads = 2;
  c.kv_heads = 1;
  c.seq_len_q = 70;
  c.seq_len_k = 90;
  c.head_dim = 32;
  c.seq_lens_q = {70, 0, 1, 33};
  variants::expect_matches_naive(c);
  c.seq_lens_k = {90, 5, 0, 64};
  c.causal = true;
  variants::expect_matches_naive(c);
  c.page_size = 16;  // the last page of each sequence partial; pages shuffled in the pool
  c.layout = Layout::bhsd;
  c.row_padding = 8;
  variants::expect_matches_naive(c);
  c.seq_lens_q.clear();
  c.seq_lens_k.clear();
  c.page_size = 64;
  variants::expect_matches_naive(c);
}

TEST(ReferenceAttention, ARowThatSeesNoKeyHasLogSumExpMinusInfinity) {
  AttentionCase c;
  c.seq_len_q = 8;
  c.seq_len_k = 4;
  c.head_dim = 32;
  c.causal = true;  // rows 0..3 see no key (bottom-right aligned)
  const AttentionProblem problem = problem_of(c);
  const AttentionInputs inputs = generate_inputs(problem, c.data, c.seed);
  const ReferenceAttention reference =
      reference_attention(problem, {inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(reference.log_sum_exp[i], -INFINITY) << i;
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isfinite(reference.log_sum_exp[i])) << i;
}

}  // namespace
}  // namespace attnfuzz
