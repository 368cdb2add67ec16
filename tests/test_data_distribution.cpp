// Input generation: the data of a case is a pure function of (problem, distribution, seed), each
// tensor its own stream, padding poisoned, and every named distribution has the property its
// description promises.
#include "fuzz/data_distribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/parallel_for.h"
#include "fuzz/attention_case.h"

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
  return generate_inputs(problem_of(attention_case), attention_case.data, attention_case.seed);
}

// One tensor's logical extent and its layout in the buffer.
struct Extent {
  std::int64_t batch, seq_len, heads, head_dim;
  TensorStrides strides;
  std::int64_t offset(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
    return b * strides.batch + s * strides.seq + h * strides.head + d;
  }
  std::int64_t elements() const { return batch * seq_len * heads * head_dim; }
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

// ---- layout: padding is poison, elements are finite ----

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

// Checks one tensor's buffer: its size is the span of its extent, every element is finite and
// every other position holds the poison. Returns the number of padding positions seen.
std::int64_t check_buffer(const std::vector<std::uint16_t>& buffer, const Extent& extent,
                          Dtype dtype, const std::string& what) {
  const std::int64_t span =
      span_elements(extent.strides, extent.batch, extent.seq_len, extent.heads, extent.head_dim);
  EXPECT_EQ(static_cast<std::int64_t>(buffer.size()), span) << what;
  if (static_cast<std::int64_t>(buffer.size()) != span) return 0;
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
  for (std::size_t position = 0; position < buffer.size(); ++position) {
    if (is_element[position]) continue;
    ++padding;
    if (buffer[position] != traits_of(dtype).poison_bits) ++unpoisoned;
  }
  EXPECT_EQ(non_finite, 0) << what;
  EXPECT_EQ(unpoisoned, 0) << what << ": padding positions without the poison pattern";
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
        const std::int64_t last_visible = problem.last_visible_key(i);
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
