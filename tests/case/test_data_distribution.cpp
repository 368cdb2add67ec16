// SPDX-License-Identifier: BSD-3-Clause
// Input generation: the data of a case is a pure function of (problem, distribution, seed), each
// tensor its own stream, padding poisoned, and every named distribution has the property its
// description promises.
#include "case/data_distribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "case/attention_case.h"
#include "case/input_draws.h"
#include "core/parallel_for.h"
#include "support/bit_hash.h"

namespace attnfuzz {
namespace {

// ---- helpers ----

// A small GQA case with seq_len_q != seq_len_k, so that mixing up Q's and K's extents shows.
AttentionCase small_case(Dtype dtype, DataDistribution data) {
  AttentionCase attention_case;
  attention_case.id = "test/0";
  attention_case.batch = 2;
  attention_case.heads = 4;
  attention_case.kv_heads = 2;
  attention_case.seq_len_q = 70;
  attention_case.seq_len_k = 90;
  attention_case.head_dim = 64;
  attention_case.dtype = dtype;
  attention_case.data = data;
  attention_case.seed = 7;
  return attention_case;
}

AttentionInputs generate(const AttentionCase& attention_case) {
  return generate_inputs(problem_of(attention_case), attention_case.data, attention_case.seed,
                         attention_case.injection);
}

// One tensor's logical extent and its layout in the buffer.
struct Extent {
  std::int64_t batch, seq_len, heads, head_dim;
  TensorStrides strides;
  std::int64_t offset(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
    return b * strides.batch + s * strides.seq + h * strides.head + d;
  }
  std::int64_t elements() const { return batch * seq_len * heads * head_dim; }
  std::int64_t span() const { return span_elements(strides, batch, seq_len, heads, head_dim); }
};
Extent q_extent(const AttentionProblem& p) {
  return {p.batch, p.seq_len_q, p.heads, p.head_dim, p.q_strides};
}
Extent k_extent(const AttentionProblem& p) {
  return {p.batch, p.seq_len_k, p.kv_heads, p.head_dim, p.k_strides};
}
Extent v_extent(const AttentionProblem& p) {
  return {p.batch, p.seq_len_k, p.kv_heads, p.head_dim, p.v_strides};
}

// The widened elements of a tensor in logical (b, s, h, d) order.
std::vector<double> values_of(const std::vector<std::uint16_t>& buffer, const Extent& extent,
                              Dtype dtype) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(extent.elements()));
  for (std::int64_t b = 0; b < extent.batch; ++b) {
    for (std::int64_t s = 0; s < extent.seq_len; ++s) {
      for (std::int64_t h = 0; h < extent.heads; ++h) {
        for (std::int64_t d = 0; d < extent.head_dim; ++d) {
          values.push_back(dtype_to_float(buffer.at(extent.offset(b, s, h, d)), dtype));
        }
      }
    }
  }
  return values;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0.0;
  for (const double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

double variance_of(const std::vector<double>& values) {
  const double mean = mean_of(values);
  double sum = 0.0;
  for (const double value : values) sum += (value - mean) * (value - mean);
  return sum / static_cast<double>(values.size() - 1);
}

double correlation_of(const std::vector<double>& a, const std::vector<double>& b) {
  const double mean_a = mean_of(a);
  const double mean_b = mean_of(b);
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - mean_a) * (b[i] - mean_b);
    aa += (a[i] - mean_a) * (a[i] - mean_a);
    bb += (b[i] - mean_b) * (b[i] - mean_b);
  }
  return ab / std::sqrt(aa * bb);
}

// Fraction of positions where two equally long sequences hold the same value.
double fraction_equal(const std::vector<double>& a, const std::vector<double>& b) {
  std::int64_t equal = 0;
  for (std::size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i] ? 1 : 0;
  return static_cast<double>(equal) / static_cast<double>(a.size());
}

std::string name_of(DataDistribution distribution) {
  return std::string(distribution_name(distribution));
}

class DataDistributionPerDtype : public ::testing::TestWithParam<Dtype> {};

INSTANTIATE_TEST_SUITE_P(BothDtypes, DataDistributionPerDtype,
                         ::testing::Values(Dtype::fp16, Dtype::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- reproducibility and independence ----

TEST_P(DataDistributionPerDtype, SameProblemDistributionAndSeedGiveBitwiseIdenticalTensors) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    const AttentionCase attention_case = small_case(GetParam(), info.distribution);
    const AttentionInputs first = generate(attention_case);
    const AttentionInputs second = generate(attention_case);
    EXPECT_EQ(first.q, second.q) << info.name;
    EXPECT_EQ(first.k, second.k) << info.name;
    EXPECT_EQ(first.v, second.v) << info.name;
  }
}

// A saved case replays the data it failed on only while its tensors keep their bits: every
// distribution's Q, K and V in both dtypes on a GQA shape (rows of 4 query heads and 2 KV heads
// of 72), with their poisoned padding and guard tails, hashed, as they were when first pinned
// (before the normal draws were vectorised).
TEST(DataDistribution, EveryDistributionKeepsItsBitsSoThatSavedCasesReplayTheirData) {
  BitHash hash;
  std::string per_distribution;
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    for (const DataDistributionInfo& info : kDataDistributions) {
      AttentionCase attention_case = small_case(dtype, info.distribution);
      attention_case.head_dim = 72;
      const AttentionInputs inputs = generate(attention_case);
      BitHash tensors_hash;
      for (const std::vector<std::uint16_t>* tensor : {&inputs.q, &inputs.k, &inputs.v}) {
        for (const std::uint16_t bits : *tensor) tensors_hash.add(bits);
      }
      hash.add(tensors_hash.value());
      per_distribution +=
          std::string(info.name) + " " + std::to_string(tensors_hash.value()) + "\n";
    }
  }
  EXPECT_EQ(hash.value(), 0x5fc533f3d1e5f152ull) << std::hex << hash.value() << "\n"
                                                 << per_distribution;
}

// A row of a tensor is drawn in runs of normals at once: a row of 20 heads of 96 (1,920
// elements) crosses a run's end inside it and ends inside the next. Every element of Q, K and V is
// still the one-by-one drawn_value of its logical index, for every distribution.
TEST(DataDistribution, RowsLongerThanARunOfNormalsDrawEveryElementAsOneByOne) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    if (info.distribution == DataDistribution::peaked_softmax) continue;  // Q copies K
    AttentionCase attention_case = small_case(Dtype::bf16, info.distribution);
    attention_case.batch = 1;
    attention_case.heads = 20;
    attention_case.kv_heads = 20;
    attention_case.seq_len_q = 3;
    attention_case.seq_len_k = 2;
    attention_case.head_dim = 96;
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate(attention_case);
    for (const auto& [role, buffer, extent] :
         {std::tuple{TensorRole::query, &inputs.q, q_extent(problem)},
          std::tuple{TensorRole::key, &inputs.k, k_extent(problem)},
          std::tuple{TensorRole::value, &inputs.v, v_extent(problem)}}) {
      const TensorDraws draws = tensor_draws(problem, info.distribution, attention_case.seed, role);
      const TensorShape shape{extent.batch, extent.seq_len, extent.heads, extent.head_dim,
                              extent.strides};
      for (std::int64_t index = 0; index < shape.elements(); ++index) {
        ASSERT_EQ(buffer->at(static_cast<std::size_t>(shape.offset_of_logical(index))),
                  element_bits(drawn_value(draws, shape, index), problem.dtype))
            << info.name << " tensor " << static_cast<int>(role) << " element " << index;
      }
    }
  }
}

TEST(DataDistribution, DataDoesNotDependOnTheThreadCount) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    const AttentionCase attention_case = small_case(Dtype::fp16, info.distribution);
    set_default_thread_count(1);
    const AttentionInputs one_thread = generate(attention_case);
    set_default_thread_count(4);
    const AttentionInputs four_threads = generate(attention_case);
    set_default_thread_count(0);
    EXPECT_EQ(one_thread.q, four_threads.q) << info.name;
    EXPECT_EQ(one_thread.k, four_threads.k) << info.name;
    EXPECT_EQ(one_thread.v, four_threads.v) << info.name;
  }
}

TEST_P(DataDistributionPerDtype, DifferentSeedGivesDifferentDataInEveryTensor) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    AttentionCase attention_case = small_case(GetParam(), info.distribution);
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs first = generate(attention_case);
    attention_case.seed += 1;
    const AttentionInputs second = generate(attention_case);
    // Independent draws agree by chance at 1 in 7 positions at most (small_integers).
    const Dtype dtype = GetParam();
    EXPECT_LT(fraction_equal(values_of(first.q, q_extent(problem), dtype),
                             values_of(second.q, q_extent(problem), dtype)),
              0.25)
        << info.name;
    EXPECT_LT(fraction_equal(values_of(first.k, k_extent(problem), dtype),
                             values_of(second.k, k_extent(problem), dtype)),
              0.25)
        << info.name;
    EXPECT_LT(fraction_equal(values_of(first.v, v_extent(problem), dtype),
                             values_of(second.v, v_extent(problem), dtype)),
              0.25)
        << info.name;
  }
}

// Each variant changes one field of the problem but leaves the compared tensor's size alone, so
// only the stream key can make the data differ.
TEST(DataDistribution, DifferentShapeGivesDifferentData) {
  const AttentionCase base = small_case(Dtype::fp16, DataDistribution::normal);
  const AttentionProblem problem = problem_of(base);
  const AttentionInputs base_inputs = generate(base);
  const std::vector<double> base_q = values_of(base_inputs.q, q_extent(problem), Dtype::fp16);
  const std::vector<double> base_k = values_of(base_inputs.k, k_extent(problem), Dtype::fp16);

  AttentionCase longer_keys = base;
  longer_keys.seq_len_k += 1;
  const AttentionInputs longer_keys_inputs = generate(longer_keys);
  EXPECT_LT(fraction_equal(base_q, values_of(longer_keys_inputs.q,
                                             q_extent(problem_of(longer_keys)), Dtype::fp16)),
            0.05);

  AttentionCase longer_queries = base;
  longer_queries.seq_len_q += 1;
  const AttentionInputs longer_queries_inputs = generate(longer_queries);
  EXPECT_LT(fraction_equal(base_k, values_of(longer_queries_inputs.k,
                                             k_extent(problem_of(longer_queries)), Dtype::fp16)),
            0.05);

  AttentionCase causal = base;
  causal.causal = true;
  const AttentionInputs causal_inputs = generate(causal);
  EXPECT_LT(
      fraction_equal(base_q, values_of(causal_inputs.q, q_extent(problem_of(causal)), Dtype::fp16)),
      0.05);

  AttentionCase more_query_heads = base;
  more_query_heads.heads = 8;  // K keeps kv_heads = 2
  const AttentionInputs more_heads_inputs = generate(more_query_heads);
  EXPECT_LT(fraction_equal(base_k, values_of(more_heads_inputs.k,
                                             k_extent(problem_of(more_query_heads)), Dtype::fp16)),
            0.05);
}

TEST(DataDistribution, DifferentDistributionGivesDifferentData) {
  // normal and value_outliers share Q's recipe, N(0, 1); only the stream key tells them apart.
  const AttentionCase normal = small_case(Dtype::fp16, DataDistribution::normal);
  const AttentionCase outliers = small_case(Dtype::fp16, DataDistribution::value_outliers);
  const AttentionProblem problem = problem_of(normal);
  EXPECT_LT(fraction_equal(values_of(generate(normal).q, q_extent(problem), Dtype::fp16),
                           values_of(generate(outliers).q, q_extent(problem), Dtype::fp16)),
            0.05);
}

// With one extent for all three tensors, Q, K and V drawn from one stream would coincide or
// correlate position by position. Two independent N(0, 1) draws round to the same value with
// probability about E[f(X) ulp(X)] = 2^-p / (2 pi): 2e-4 in fp16, 1.2e-3 in bf16; their sample
// correlation over n = 35840 pairs has sd 1/sqrt(n) = 0.0053.
TEST_P(DataDistributionPerDtype, QueryKeyAndValueAreIndependentStreams) {
  AttentionCase attention_case = small_case(GetParam(), DataDistribution::normal);
  attention_case.kv_heads = attention_case.heads;
  attention_case.seq_len_k = attention_case.seq_len_q;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const std::vector<double> q = values_of(inputs.q, q_extent(problem), GetParam());
  const std::vector<double> k = values_of(inputs.k, k_extent(problem), GetParam());
  const std::vector<double> v = values_of(inputs.v, v_extent(problem), GetParam());
  ASSERT_EQ(q.size(), k.size());
  ASSERT_EQ(q.size(), v.size());
  EXPECT_LT(fraction_equal(q, k), 0.01);
  EXPECT_LT(fraction_equal(q, v), 0.01);
  EXPECT_LT(fraction_equal(k, v), 0.01);
  EXPECT_LT(std::fabs(correlation_of(q, k)), 0.03);
  EXPECT_LT(std::fabs(correlation_of(q, v)), 0.03);
  EXPECT_LT(std::fabs(correlation_of(k, v)), 0.03);
}

// ---- layout: padding and guard tail are poison, elements are finite ----

struct LayoutParam {
  Dtype dtype;
  Layout layout;
  std::int64_t row_padding;
};

class DataDistributionLayout : public ::testing::TestWithParam<LayoutParam> {};

std::string describe(const LayoutParam& param) {
  return std::string(dtype_name(param.dtype)) + "_" + std::string(layout_name(param.layout)) +
         "_pad" + std::to_string(param.row_padding);
}
void PrintTo(const LayoutParam& param, std::ostream* out) {
  *out << describe(param);
}

INSTANTIATE_TEST_SUITE_P(Layouts, DataDistributionLayout,
                         ::testing::Values(LayoutParam{Dtype::fp16, Layout::bshd, 0},
                                           LayoutParam{Dtype::fp16, Layout::bshd, 8},
                                           LayoutParam{Dtype::bf16, Layout::bshd, 3},
                                           LayoutParam{Dtype::fp16, Layout::bhsd, 0},
                                           LayoutParam{Dtype::bf16, Layout::bhsd, 8}),
                         [](const auto& info) { return describe(info.param); });

// Checks one tensor's buffer: its size is the span of its extent plus the guard tail, every
// element is finite and every other position holds the poison. Returns the number of padding
// positions seen inside the span.
std::int64_t check_buffer(const std::vector<std::uint16_t>& buffer, const Extent& extent,
                          Dtype dtype, const std::string& what) {
  const std::int64_t span = extent.span();
  const std::int64_t size = span + input_guard_elements(extent.strides, extent.head_dim);
  EXPECT_EQ(static_cast<std::int64_t>(buffer.size()), size) << what;
  if (static_cast<std::int64_t>(buffer.size()) != size) return 0;
  std::vector<bool> is_element(buffer.size(), false);
  std::int64_t non_finite = 0;
  for (std::int64_t b = 0; b < extent.batch; ++b) {
    for (std::int64_t s = 0; s < extent.seq_len; ++s) {
      for (std::int64_t h = 0; h < extent.heads; ++h) {
        for (std::int64_t d = 0; d < extent.head_dim; ++d) {
          const std::int64_t offset = extent.offset(b, s, h, d);
          is_element[offset] = true;
          if (!std::isfinite(dtype_to_float(buffer[offset], dtype))) ++non_finite;
        }
      }
    }
  }
  std::int64_t padding = 0;
  std::int64_t unpoisoned = 0;
  std::int64_t unpoisoned_tail = 0;
  for (std::size_t position = 0; position < buffer.size(); ++position) {
    if (is_element[position]) continue;
    const bool poisoned = buffer[position] == traits_of(dtype).poison_bits;
    if (static_cast<std::int64_t>(position) >= span) {
      unpoisoned_tail += poisoned ? 0 : 1;
      continue;
    }
    ++padding;
    unpoisoned += poisoned ? 0 : 1;
  }
  EXPECT_EQ(non_finite, 0) << what;
  EXPECT_EQ(unpoisoned, 0) << what << ": padding positions without the poison pattern";
  EXPECT_EQ(unpoisoned_tail, 0) << what << ": guard tail positions without the poison pattern";
  return padding;
}

TEST_P(DataDistributionLayout, PaddingHoldsThePoisonPatternAndEveryElementIsFinite) {
  const LayoutParam param = GetParam();
  for (const DataDistributionInfo& info : kDataDistributions) {
    for (const bool causal : {false, true}) {
      AttentionCase attention_case = small_case(param.dtype, info.distribution);
      attention_case.layout = param.layout;
      attention_case.row_padding = param.row_padding;
      attention_case.causal = causal;
      const AttentionProblem problem = problem_of(attention_case);
      const AttentionInputs inputs = generate(attention_case);
      const std::string what = name_of(info.distribution) + (causal ? " causal" : "");
      const std::int64_t q_padding =
          check_buffer(inputs.q, q_extent(problem), param.dtype, what + " q");
      check_buffer(inputs.k, k_extent(problem), param.dtype, what + " k");
      check_buffer(inputs.v, v_extent(problem), param.dtype, what + " v");
      // Every head row but the tensor's last is followed by row_padding positions.
      const Extent q = q_extent(problem);
      EXPECT_EQ(q_padding, (q.batch * q.seq_len * q.heads - 1) * param.row_padding) << what;
    }
  }
}

// A kernel that reads a whole tile of rows past seq_len (an unmasked tail tile) of the last batch
// and head, the worst place, stays inside the buffer and reads poison there.
TEST_P(DataDistributionLayout, ATileReadPastTheLastRowsStaysInsideTheBufferAndReadsPoison) {
  const LayoutParam param = GetParam();
  AttentionCase attention_case = small_case(param.dtype, DataDistribution::normal);
  attention_case.layout = param.layout;
  attention_case.row_padding = param.row_padding;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const std::uint16_t poison = traits_of(param.dtype).poison_bits;
  for (const auto& [name, buffer, extent] : {std::tuple{"q", &inputs.q, q_extent(problem)},
                                             std::tuple{"k", &inputs.k, k_extent(problem)},
                                             std::tuple{"v", &inputs.v, v_extent(problem)}}) {
    const std::int64_t last_batch = extent.batch - 1;
    const std::int64_t last_head = extent.heads - 1;
    // The last element such a read touches: row seq_len + 63, element head_dim - 1.
    const std::int64_t farthest = extent.offset(last_batch, extent.seq_len + kInputGuardRows - 1,
                                                last_head, extent.head_dim - 1);
    EXPECT_LT(farthest, static_cast<std::int64_t>(buffer->size())) << name;
    std::int64_t unpoisoned = 0;
    for (std::int64_t s = extent.seq_len; s < extent.seq_len + kInputGuardRows; ++s) {
      for (std::int64_t d = 0; d < extent.head_dim; ++d) {
        unpoisoned += buffer->at(extent.offset(last_batch, s, last_head, d)) != poison ? 1 : 0;
      }
    }
    EXPECT_EQ(unpoisoned, 0) << name << ": rows past seq_len of the last batch and head";
    // Pointers still start at element [0, 0, 0, 0]: the tail comes after the span, not before.
    EXPECT_EQ(static_cast<std::int64_t>(buffer->size()),
              extent.span() + input_guard_elements(extent.strides, extent.head_dim))
        << name;
    EXPECT_NE(buffer->front(), poison) << name;
  }
}

// ---- each distribution's promised property ----

// n = 2 * 256 * 4 * 64 = 131072 draws per tensor. The sample mean of N(0, 1) has sd
// 1/sqrt(n) = 0.0028 and the sample variance sd sqrt(2 / n) = 0.0039; rounding to bf16 moves the
// variance by at most E[delta^2] <= u^2 = 2^-16. Six standard deviations: 0.017 and 0.024.
TEST_P(DataDistributionPerDtype, NormalHasSampleMeanNearZeroAndVarianceNearOne) {
  AttentionCase attention_case = small_case(GetParam(), DataDistribution::normal);
  attention_case.kv_heads = attention_case.heads;
  attention_case.seq_len_q = attention_case.seq_len_k = 256;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const double n = static_cast<double>(q_extent(problem).elements());
  const double mean_bound = 6.0 / std::sqrt(n);
  const double variance_bound = 6.0 * std::sqrt(2.0 / n);
  for (const auto& [name, values] :
       {std::pair{"q", values_of(inputs.q, q_extent(problem), GetParam())},
        std::pair{"k", values_of(inputs.k, k_extent(problem), GetParam())},
        std::pair{"v", values_of(inputs.v, v_extent(problem), GetParam())}}) {
    EXPECT_LT(std::fabs(mean_of(values)), mean_bound) << name;
    EXPECT_LT(std::fabs(variance_of(values) - 1.0), variance_bound) << name;
  }
}

// U(-1, 1) has mean 0 and variance 1/3; over n = 2 * 70 * 4 * 64 = 35840 draws (Q) the sample mean
// has sd sqrt(1 / (3 n)) = 0.003 and the sample variance sd sqrt((1/5 - 1/9) / n) = 0.0016.
TEST_P(DataDistributionPerDtype, UniformLiesInMinusOneToOneAndSpansIt) {
  const AttentionCase attention_case = small_case(GetParam(), DataDistribution::uniform);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  for (const auto& [name, values] :
       {std::pair{"q", values_of(inputs.q, q_extent(problem), GetParam())},
        std::pair{"k", values_of(inputs.k, k_extent(problem), GetParam())},
        std::pair{"v", values_of(inputs.v, v_extent(problem), GetParam())}}) {
    const double n = static_cast<double>(values.size());
    EXPECT_GE(*std::min_element(values.begin(), values.end()), -1.0) << name;
    EXPECT_LE(*std::max_element(values.begin(), values.end()), 1.0) << name;
    EXPECT_LT(*std::min_element(values.begin(), values.end()), -0.99) << name;
    EXPECT_GT(*std::max_element(values.begin(), values.end()), 0.99) << name;
    EXPECT_LT(std::fabs(mean_of(values)), 6.0 * std::sqrt(1.0 / (3.0 * n))) << name;
    EXPECT_LT(std::fabs(variance_of(values) - 1.0 / 3.0), 6.0 * std::sqrt((0.2 - 1.0 / 9.0) / n))
        << name;
  }
}

TEST_P(DataDistributionPerDtype, SmallIntegersAreIntegersFromMinusThreeToThreeAndUseThemAll) {
  const AttentionCase attention_case = small_case(GetParam(), DataDistribution::small_integers);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  for (const auto& [name, values] :
       {std::pair{"q", values_of(inputs.q, q_extent(problem), GetParam())},
        std::pair{"k", values_of(inputs.k, k_extent(problem), GetParam())},
        std::pair{"v", values_of(inputs.v, v_extent(problem), GetParam())}}) {
    std::set<double> seen;
    for (const double value : values) {
      ASSERT_EQ(value, std::round(value)) << name;
      ASSERT_GE(value, -3.0) << name;
      ASSERT_LE(value, 3.0) << name;
      seen.insert(value);
    }
    EXPECT_EQ(seen.size(), 7u) << name;
  }
}

TEST_P(DataDistributionPerDtype, FlatSoftmaxGivesEveryKeyOfAHeadTheSameRow) {
  const AttentionCase attention_case = small_case(GetParam(), DataDistribution::flat_softmax);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const Extent k = k_extent(problem);
  std::int64_t differing = 0;
  for (std::int64_t b = 0; b < k.batch; ++b) {
    for (std::int64_t h = 0; h < k.heads; ++h) {
      for (std::int64_t s = 1; s < k.seq_len; ++s) {
        for (std::int64_t d = 0; d < k.head_dim; ++d) {
          differing += inputs.k[k.offset(b, s, h, d)] != inputs.k[k.offset(b, 0, h, d)] ? 1 : 0;
        }
      }
    }
  }
  EXPECT_EQ(differing, 0);
  // Not one constant: the shared rows differ between heads and batches, and V is not flat.
  std::set<std::vector<std::uint16_t>> head_rows;
  for (std::int64_t b = 0; b < k.batch; ++b) {
    for (std::int64_t h = 0; h < k.heads; ++h) {
      const auto row = inputs.k.begin() + k.offset(b, 0, h, 0);
      head_rows.emplace(row, row + k.head_dim);
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(head_rows.size()), k.batch * k.heads);
  const Extent v = v_extent(problem);
  EXPECT_NE(inputs.v[v.offset(0, 0, 0, 0)], inputs.v[v.offset(0, 1, 0, 0)]);
}

struct PeakedParam {
  Dtype dtype;
  bool causal;
  std::int64_t seq_len_q, seq_len_k;
};

class DataDistributionPeakedSoftmax : public ::testing::TestWithParam<PeakedParam> {};

std::string describe(const PeakedParam& param) {
  return std::string(dtype_name(param.dtype)) + (param.causal ? "_causal_" : "_") + "Sq" +
         std::to_string(param.seq_len_q) + "_Sk" + std::to_string(param.seq_len_k);
}
void PrintTo(const PeakedParam& param, std::ostream* out) {
  *out << describe(param);
}

INSTANTIATE_TEST_SUITE_P(Shapes, DataDistributionPeakedSoftmax,
                         ::testing::Values(PeakedParam{Dtype::fp16, false, 70, 90},
                                           PeakedParam{Dtype::bf16, false, 90, 70},
                                           PeakedParam{Dtype::fp16, true, 70, 90},
                                           PeakedParam{Dtype::bf16, true, 70, 90},
                                           PeakedParam{Dtype::fp16, true, 90, 70}),
                         [](const auto& info) { return describe(info.param); });

// Each query row is 3 x (rounded to the dtype) one key row of its KV head: under the causal mask
// its last visible key (key 0 for a row that sees none), so the copy is never masked. That key's
// score then stands far above every other visible key's.
TEST_P(DataDistributionPeakedSoftmax, EachQueryRowIsThreeTimesItsDominantKey) {
  const PeakedParam param = GetParam();
  AttentionCase attention_case = small_case(param.dtype, DataDistribution::peaked_softmax);
  attention_case.causal = param.causal;
  attention_case.seq_len_q = param.seq_len_q;
  attention_case.seq_len_k = param.seq_len_k;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const Extent q = q_extent(problem);
  const Extent k = k_extent(problem);
  const Dtype dtype = param.dtype;

  // Whether query row (b, i, h) is exactly 3 x key row (b, j, h / group), rounded to the dtype.
  const auto copies = [&](std::int64_t b, std::int64_t i, std::int64_t h, std::int64_t j) {
    for (std::int64_t d = 0; d < q.head_dim; ++d) {
      const double key =
          dtype_to_float(inputs.k[k.offset(b, j, h / problem.group_size(), d)], dtype);
      if (inputs.q[q.offset(b, i, h, d)] != float_to_dtype(static_cast<float>(3.0 * key), dtype)) {
        return false;
      }
    }
    return true;
  };
  const auto score = [&](std::int64_t b, std::int64_t i, std::int64_t h, std::int64_t j) {
    double dot = 0.0;
    for (std::int64_t d = 0; d < q.head_dim; ++d) {
      dot += static_cast<double>(dtype_to_float(inputs.q[q.offset(b, i, h, d)], dtype)) *
             dtype_to_float(inputs.k[k.offset(b, j, h / problem.group_size(), d)], dtype);
    }
    return problem.softmax_scale * dot;
  };

  std::set<std::int64_t> dominant_keys;
  for (std::int64_t b = 0; b < q.batch; ++b) {
    for (std::int64_t h = 0; h < q.heads; ++h) {
      for (std::int64_t i = 0; i < q.seq_len; ++i) {
        const std::int64_t last_visible = problem.visible_keys_of(b, i).end - 1;
        std::int64_t dominant = -1;
        if (param.causal) {
          dominant = std::max<std::int64_t>(last_visible, 0);
          ASSERT_TRUE(copies(b, i, h, dominant))
              << "row " << i << " of head " << h << " is not 3 x key " << dominant;
        } else {
          for (std::int64_t j = 0; j < k.seq_len && dominant < 0; ++j) {
            if (copies(b, i, h, j)) dominant = j;
          }
          ASSERT_GE(dominant, 0) << "row " << i << " of head " << h << " copies no key";
        }
        dominant_keys.insert(dominant);
        const double dominant_score = score(b, i, h, dominant);
        for (std::int64_t j = 0; j <= last_visible; ++j) {
          if (j == dominant) continue;
          ASSERT_LT(score(b, i, h, j), dominant_score)
              << "row " << i << " of head " << h << ": key " << j << " outscores key " << dominant;
        }
      }
    }
  }
  // Rows copy many different keys, not one for all.
  EXPECT_GE(static_cast<std::int64_t>(dominant_keys.size()), std::min(q.seq_len, k.seq_len) / 2);
}

// The outlier level the .cpp documents: half the dtype's largest finite value, or float's largest
// over 2 seq_len_k when smaller, so an fp32 sum over the keys of P_j V_j (P_j <= 1) cannot
// overflow.
double outlier_level(Dtype dtype, std::int64_t seq_len_k) {
  return std::min(0.5 * traits_of(dtype).max_finite,
                  static_cast<double>(std::numeric_limits<float>::max()) /
                      (2.0 * static_cast<double>(seq_len_k)));
}

TEST_P(DataDistributionPerDtype, ValueOutliersHaveSomeFiniteValuesNearTheOutlierLevel) {
  const Dtype dtype = GetParam();
  const AttentionCase attention_case = small_case(dtype, DataDistribution::value_outliers);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const double level = outlier_level(dtype, problem.seq_len_k);
  const Extent v = v_extent(problem);
  const std::vector<double> values = values_of(inputs.v, v, dtype);
  std::int64_t outliers = 0;
  for (const double value : values) {
    ASSERT_TRUE(std::isfinite(value));
    EXPECT_LE(std::fabs(value), level * (1.0 + traits_of(dtype).unit_roundoff()));
    if (std::fabs(value) >= 0.25 * level) ++outliers;
  }
  // About 1 in 64 of n = 23040 elements (360, sd 19): some, and still rare.
  EXPECT_GT(outliers, 0);
  EXPECT_LT(outliers, v.elements() / 16);
  // The accumulator cannot overflow: every column's sum of |V| over the keys stays below float's
  // largest value.
  for (std::int64_t b = 0; b < v.batch; ++b) {
    for (std::int64_t h = 0; h < v.heads; ++h) {
      for (std::int64_t d = 0; d < v.head_dim; ++d) {
        double column_sum = 0.0;
        for (std::int64_t s = 0; s < v.seq_len; ++s) {
          column_sum += std::fabs(dtype_to_float(inputs.v[v.offset(b, s, h, d)], dtype));
        }
        ASSERT_LT(column_sum, static_cast<double>(std::numeric_limits<float>::max()));
      }
    }
  }
  // Q and K stay N(0, 1): no outliers there.
  for (const double value : values_of(inputs.q, q_extent(problem), dtype)) {
    ASSERT_LT(std::fabs(value), 10.0);
  }
  for (const double value : values_of(inputs.k, k_extent(problem), dtype)) {
    ASSERT_LT(std::fabs(value), 10.0);
  }
}

// Row offsets ~ N(0, 200^2) with a per-key spread ~ N(0, 10^2): over 2 heads x 64 rows, about a
// third of the rows have every score below -50 and about a third a maximum above +50.
TEST_P(DataDistributionPerDtype, LargeScoresGiveRowsFarBelowAndFarAboveZero) {
  const Dtype dtype = GetParam();
  AttentionCase attention_case = small_case(dtype, DataDistribution::large_scores);
  attention_case.batch = 1;
  attention_case.heads = attention_case.kv_heads = 2;
  attention_case.seq_len_q = attention_case.seq_len_k = 64;
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const Extent q = q_extent(problem);
  const Extent k = k_extent(problem);
  std::int64_t rows_all_below = 0;
  std::int64_t rows_max_above = 0;
  for (std::int64_t h = 0; h < q.heads; ++h) {
    for (std::int64_t i = 0; i < q.seq_len; ++i) {
      double row_max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < k.seq_len; ++j) {
        double dot = 0.0;
        for (std::int64_t d = 0; d < q.head_dim; ++d) {
          dot += static_cast<double>(dtype_to_float(inputs.q[q.offset(0, i, h, d)], dtype)) *
                 dtype_to_float(inputs.k[k.offset(0, j, h, d)], dtype);
        }
        row_max = std::max(row_max, problem.softmax_scale * dot);
      }
      ASSERT_TRUE(std::isfinite(row_max));
      if (row_max < -50.0) ++rows_all_below;
      if (row_max > 50.0) ++rows_max_above;
    }
  }
  EXPECT_GT(rows_all_below, 0);
  EXPECT_GT(rows_max_above, 0);
}

// ---- special-value injection ----

Extent extent_of(const AttentionProblem& problem, TensorRole role) {
  switch (role) {
    case TensorRole::query:
      return q_extent(problem);
    case TensorRole::key:
      return k_extent(problem);
    case TensorRole::value:
      break;
  }
  return v_extent(problem);
}

const std::vector<std::uint16_t>& buffer_of(const AttentionInputs& inputs, TensorRole role) {
  return role == TensorRole::query ? inputs.q : role == TensorRole::key ? inputs.k : inputs.v;
}

// Buffer positions where two generations of one case differ.
std::vector<std::int64_t> changed_positions(const std::vector<std::uint16_t>& before,
                                            const std::vector<std::uint16_t>& after) {
  std::vector<std::int64_t> changed;
  for (std::size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    if (before[i] != after[i]) changed.push_back(static_cast<std::int64_t>(i));
  }
  return changed;
}

// Whether `position` holds an element of the extent (not padding, not the guard tail).
bool is_element_position(const Extent& extent, std::int64_t position) {
  for (std::int64_t b = 0; b < extent.batch; ++b) {
    for (std::int64_t s = 0; s < extent.seq_len; ++s) {
      for (std::int64_t h = 0; h < extent.heads; ++h) {
        const std::int64_t row = extent.offset(b, s, h, 0);
        if (position >= row && position < row + extent.head_dim) return true;
      }
    }
  }
  return false;
}

std::string describe(const SpecialValueInjection& injection) {
  return format_injection(injection);
}

class SpecialValueInjectionPerDtype : public ::testing::TestWithParam<Dtype> {};

INSTANTIATE_TEST_SUITE_P(BothDtypes, SpecialValueInjectionPerDtype,
                         ::testing::Values(Dtype::fp16, Dtype::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Every kind into every tensor, padded BHSD so that element positions and buffer positions
// differ: exactly `count` distinct elements change, each to a value of its kind, nothing else.
TEST_P(SpecialValueInjectionPerDtype, EachKindOverwritesExactlyCountElementsWithItsValues) {
  const Dtype dtype = GetParam();
  const std::uint16_t one = float_to_dtype(1.0f, dtype);
  for (const SpecialValueInfo& info : kSpecialValues) {
    if (info.value == SpecialValue::none) continue;
    for (const TensorRole role : {TensorRole::query, TensorRole::key, TensorRole::value}) {
      for (const std::int64_t count : {1, 7, 64}) {
        AttentionCase attention_case = small_case(dtype, DataDistribution::normal);
        attention_case.layout = Layout::bhsd;
        attention_case.row_padding = 3;
        const AttentionProblem problem = problem_of(attention_case);
        const AttentionInputs plain = generate(attention_case);
        attention_case.injection = {info.value, role, count};
        const std::string what = describe(attention_case.injection);
        const AttentionInputs injected = generate(attention_case);
        const Extent extent = extent_of(problem, role);
        const std::vector<std::uint16_t>& before = buffer_of(plain, role);
        const std::vector<std::uint16_t>& after = buffer_of(injected, role);
        ASSERT_EQ(before.size(), after.size()) << what;
        const std::vector<std::int64_t> changed = changed_positions(before, after);
        ASSERT_EQ(static_cast<std::int64_t>(changed.size()), count) << what;
        // The other tensors are untouched.
        for (const TensorRole other : {TensorRole::query, TensorRole::key, TensorRole::value}) {
          if (other != role) {
            EXPECT_EQ(buffer_of(plain, other), buffer_of(injected, other)) << what;
          }
        }
        std::set<bool> signs;
        for (const std::int64_t position : changed) {
          ASSERT_TRUE(is_element_position(extent, position)) << what << " wrote padding";
          const std::uint16_t bits = after[position];
          const std::uint16_t magnitude = bits & 0x7FFFu;
          const double value = dtype_to_float(bits, dtype);
          signs.insert((bits & 0x8000u) != 0);
          switch (info.value) {
            case SpecialValue::zero:
              EXPECT_EQ(bits, 0x0000u) << what;
              break;
            case SpecialValue::negative_zero:
              EXPECT_EQ(bits, 0x8000u) << what;
              break;
            case SpecialValue::subnormal:
              EXPECT_EQ(magnitude, 0x0001u) << what;
              EXPECT_EQ(std::fabs(value), traits_of(dtype).min_subnormal) << what;
              break;
            case SpecialValue::one_ulp:
              EXPECT_TRUE(magnitude == one + 1 || magnitude == one - 1) << what;
              break;
            case SpecialValue::large:
              EXPECT_TRUE(std::isfinite(value)) << what;
              EXPECT_GT(std::fabs(value), 100.0) << what;  // N(0, 1) data never get there
              if (role == TensorRole::value) {
                // The value_outliers level, rounded down: an fp32 sum of seq_len_k of them
                // stays below half of float's largest value.
                EXPECT_LE(std::fabs(value), outlier_level(dtype, problem.seq_len_k)) << what;
                EXPECT_GT(std::fabs(value), outlier_level(dtype, problem.seq_len_k) *
                                                (1.0 - 2.0 * traits_of(dtype).unit_roundoff()))
                    << what;
              }
              break;
            case SpecialValue::none:
              break;
          }
        }
        // Kinds with a sign draw it per element: 64 draws show both.
        if (count == 64 && info.value != SpecialValue::zero &&
            info.value != SpecialValue::negative_zero) {
          EXPECT_EQ(signs.size(), 2u) << what;
        }
      }
    }
  }
}

// A large Q or K keeps every score, scaled or not, within half the dtype's largest value (fp16:
// the plain reference rounds scores to fp16) even when every injected element shares a row.
TEST_P(SpecialValueInjectionPerDtype, LargeQueryOrKeyKeepsEveryScoreWithinTheDtypesRange) {
  const Dtype dtype = GetParam();
  for (const DataDistribution data : {DataDistribution::normal, DataDistribution::large_scores,
                                      DataDistribution::peaked_softmax}) {
    for (const TensorRole role : {TensorRole::query, TensorRole::key}) {
      for (const std::int64_t count : {1, 3000}) {
        AttentionCase attention_case = small_case(dtype, data);
        attention_case.injection = {SpecialValue::large, role, count};
        const AttentionProblem problem = problem_of(attention_case);
        const AttentionInputs inputs = generate(attention_case);
        const Extent q = q_extent(problem);
        const Extent k = k_extent(problem);
        double largest_score = 0.0;
        for (std::int64_t h = 0; h < q.heads; ++h) {
          for (std::int64_t i = 0; i < q.seq_len; ++i) {
            for (std::int64_t j = 0; j < k.seq_len; ++j) {
              double dot = 0.0;
              for (std::int64_t d = 0; d < q.head_dim; ++d) {
                dot += std::fabs(
                    static_cast<double>(dtype_to_float(inputs.q[q.offset(0, i, h, d)], dtype)) *
                    dtype_to_float(inputs.k[k.offset(0, j, h / problem.group_size(), d)], dtype));
              }
              largest_score = std::max(largest_score, dot);
            }
          }
        }
        const std::string what = name_of(data) + " " + describe(attention_case.injection);
        EXPECT_LE(largest_score * std::max(problem.softmax_scale, 1.0),
                  0.5 * traits_of(dtype).max_finite)
            << what;
        EXPECT_GT(largest_score * problem.softmax_scale, 100.0) << what;  // large indeed
      }
    }
  }
}

TEST(SpecialValueInjection, CountBeyondTheTensorsSizeOverwritesEveryElementAndNothingElse) {
  AttentionCase attention_case = small_case(Dtype::fp16, DataDistribution::normal);
  attention_case.row_padding = 8;
  attention_case.injection = {SpecialValue::zero, TensorRole::key, 1'000'000'000};
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate(attention_case);
  const Extent k = k_extent(problem);
  const std::int64_t padding = check_buffer(inputs.k, k, Dtype::fp16, "k");
  EXPECT_EQ(padding, (k.batch * k.seq_len * k.heads - 1) * 8);
  for (const double value : values_of(inputs.k, k, Dtype::fp16)) ASSERT_EQ(value, 0.0);
}

TEST(SpecialValueInjection, PositionsAreAPureFunctionOfSeedProblemAndTensor) {
  AttentionCase attention_case = small_case(Dtype::bf16, DataDistribution::uniform);
  attention_case.injection = {SpecialValue::zero, TensorRole::value, 8};
  const AttentionInputs first = generate(attention_case);
  EXPECT_EQ(first.v, generate(attention_case).v);
  set_default_thread_count(1);
  EXPECT_EQ(first.v, generate(attention_case).v);
  set_default_thread_count(0);
  // Another seed puts them elsewhere.
  AttentionCase reseeded = attention_case;
  reseeded.seed += 1;
  AttentionCase reseeded_plain = reseeded;
  reseeded_plain.injection = {};
  AttentionCase plain = attention_case;
  plain.injection = {};
  const Extent v = v_extent(problem_of(attention_case));
  std::set<std::int64_t> here, there;
  for (const std::int64_t position : changed_positions(generate(plain).v, first.v)) {
    here.insert(position);
  }
  for (const std::int64_t position :
       changed_positions(generate(reseeded_plain).v, generate(reseeded).v)) {
    there.insert(position);
  }
  EXPECT_EQ(here.size(), 8u);
  EXPECT_EQ(there.size(), 8u);
  EXPECT_NE(here, there);
  EXPECT_LT(*here.rbegin(), v.span());
}

TEST(SpecialValueInjection, NoneChangesNothing) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    AttentionCase attention_case = small_case(Dtype::fp16, info.distribution);
    const AttentionInputs plain = generate(attention_case);
    for (const SpecialValueInjection& none :
         {SpecialValueInjection{}, SpecialValueInjection{SpecialValue::none, TensorRole::query, 5},
          *parse_injection("none"), *parse_injection("k:none:3")}) {
      attention_case.injection = none;
      const AttentionInputs inputs = generate(attention_case);
      EXPECT_EQ(inputs.q, plain.q) << info.name;
      EXPECT_EQ(inputs.k, plain.k) << info.name;
      EXPECT_EQ(inputs.v, plain.v) << info.name;
    }
  }
}

TEST(SpecialValueInjection, FormatAndParseRoundTrip) {
  EXPECT_EQ(format_injection({}), "none");
  EXPECT_EQ(parse_injection("none"), SpecialValueInjection{});
  EXPECT_EQ(format_injection({SpecialValue::large, TensorRole::value, 4}), "v:large:4");
  EXPECT_EQ(parse_injection("q:negative_zero:12"),
            (SpecialValueInjection{SpecialValue::negative_zero, TensorRole::query, 12}));
  for (const SpecialValueInfo& info : kSpecialValues) {
    EXPECT_FALSE(info.what.empty()) << info.name;
    if (info.value == SpecialValue::none) continue;
    for (const TensorRole role : {TensorRole::query, TensorRole::key, TensorRole::value}) {
      for (const std::int64_t count : {std::int64_t{1}, std::int64_t{8}, std::int64_t{1} << 40}) {
        const SpecialValueInjection injection{info.value, role, count};
        const std::string text = format_injection(injection);
        EXPECT_EQ(parse_injection(text), injection) << text;
        EXPECT_NE(text.find(info.name), std::string::npos) << text;
      }
    }
  }
  // A kind of none reads as none, whatever its tensor and count.
  EXPECT_EQ(parse_injection("v:none:0"), SpecialValueInjection{});
}

TEST(SpecialValueInjection, GarbageDoesNotParse) {
  for (const char* text : {"",
                           "None",
                           "v",
                           "v:",
                           "v:large",
                           "v:large:",
                           "v:large:0",
                           "v:large:-1",
                           "v:large:+1",
                           "v:large:1x",
                           "v:large: 1",
                           " v:large:1",
                           "v:large:1 ",
                           "v:large:1:2",
                           "V:large:1",
                           "o:large:1",
                           "x:large:1",
                           "v:huge:1",
                           "v::1",
                           ":large:1",
                           "v:Large:1",
                           "v:large:99999999999999999999",
                           "v:none:",
                           "v:none:x",
                           "none:large:1"}) {
    EXPECT_EQ(parse_injection(text), std::nullopt) << '"' << text << '"';
  }
}

// ---- names ----

TEST(DataDistribution, EveryNameParsesBackAndUnknownNamesDoNot) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    EXPECT_EQ(parse_distribution(info.name), info.distribution);
    EXPECT_EQ(distribution_name(info.distribution), info.name);
    EXPECT_FALSE(info.purpose.empty()) << info.name;
  }
  EXPECT_EQ(parse_distribution("gaussian"), std::nullopt);
  EXPECT_EQ(parse_distribution("Normal"), std::nullopt);
  EXPECT_EQ(parse_distribution(""), std::nullopt);
}

}  // namespace
}  // namespace attnfuzz
