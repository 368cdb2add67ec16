// Input generation. Every value is a pure function of (seed, problem shape, tensor, logical
// index): a counter-based generator (SplitMix64 finaliser over a stream key and the index) needs
// no state, so tensors are independent streams and generation order never matters.
#include "fuzz/data_distribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/parallel_for.h"

namespace attnfuzz {
namespace {

enum class TensorId : std::uint64_t { query = 1, key = 2, value = 3 };

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A stream: one tensor of one case. Keyed by everything that identifies the case's data.
class Stream {
 public:
  Stream(std::uint64_t seed, const AttentionProblem& problem, DataDistribution distribution,
         TensorId tensor) {
    std::uint64_t key = mix(seed);
    for (std::uint64_t field :
         {static_cast<std::uint64_t>(problem.batch), static_cast<std::uint64_t>(problem.heads),
          static_cast<std::uint64_t>(problem.kv_heads),
          static_cast<std::uint64_t>(problem.seq_len_q),
          static_cast<std::uint64_t>(problem.seq_len_k),
          static_cast<std::uint64_t>(problem.head_dim), static_cast<std::uint64_t>(problem.dtype),
          static_cast<std::uint64_t>(problem.causal), static_cast<std::uint64_t>(distribution),
          static_cast<std::uint64_t>(tensor)}) {
      key = mix(key ^ field);
    }
    key_ = key;
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform(std::uint64_t index, std::uint64_t draw = 0) const {
    return static_cast<double>(mix(key_ ^ mix(index * 4 + draw)) >> 11) * 0x1p-53;
  }
  double symmetric_uniform(std::uint64_t index) const { return 2.0 * uniform(index) - 1.0; }
  // Standard normal by Box-Muller from two draws of the same index.
  double normal(std::uint64_t index) const {
    const double radius = std::sqrt(-2.0 * std::log1p(-uniform(index, 0)));
    return radius * std::cos(2.0 * std::numbers::pi * uniform(index, 1));
  }

 private:
  std::uint64_t key_ = 0;
};

// Shape of one tensor and where its logical element [b, s, h, d] lives.
struct TensorShape {
  std::int64_t batch, seq_len, heads, head_dim;
  TensorStrides strides;
  std::int64_t logical_index(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
    return ((b * seq_len + s) * heads + h) * head_dim + d;
  }
  std::int64_t offset(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
    return b * strides.batch + s * strides.seq + h * strides.head + d;
  }
};

// Fills every element of `shape` with value(b, s, h, d, logical index), rounded to the dtype;
// the rest of the buffer (row padding) holds the poison NaN.
template <typename ValueOf>
std::vector<std::uint16_t> fill_tensor(const TensorShape& shape, Dtype dtype, ValueOf value_of) {
  const std::int64_t span =
      span_elements(shape.strides, shape.batch, shape.seq_len, shape.heads, shape.head_dim);
  std::vector<std::uint16_t> buffer(static_cast<std::size_t>(span), traits_of(dtype).poison_bits);
  parallel_for(shape.batch * shape.seq_len, [&](std::int64_t row) {
    const std::int64_t b = row / shape.seq_len;
    const std::int64_t s = row % shape.seq_len;
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      for (std::int64_t d = 0; d < shape.head_dim; ++d) {
        const double value = value_of(b, s, h, d, shape.logical_index(b, s, h, d));
        buffer[shape.offset(b, s, h, d)] = float_to_dtype(static_cast<float>(value), dtype);
      }
    }
  });
  return buffer;
}

// The key a query row of `peaked_softmax` copies: its last visible key, so it is never masked.
std::int64_t dominant_key(const AttentionProblem& problem, std::int64_t query_row) {
  const std::int64_t last = problem.last_visible_key(query_row);
  if (problem.causal) return std::max<std::int64_t>(last, 0);
  return (query_row * 7919) % problem.seq_len_k;
}

}  // namespace

std::optional<DataDistribution> parse_distribution(std::string_view name) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    if (info.name == name) return info.distribution;
  }
  return std::nullopt;
}

AttentionInputs generate_inputs(const AttentionProblem& problem, DataDistribution distribution,
                                std::uint64_t seed) {
  const Stream q_stream(seed, problem, distribution, TensorId::query);
  const Stream k_stream(seed, problem, distribution, TensorId::key);
  const Stream v_stream(seed, problem, distribution, TensorId::value);
  const TensorShape q_shape{problem.batch, problem.seq_len_q, problem.heads, problem.head_dim,
                            problem.q_strides};
  const TensorShape k_shape{problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim,
                            problem.k_strides};
  const TensorShape v_shape{problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim,
                            problem.v_strides};
  const Dtype dtype = problem.dtype;
  auto normal_of = [](const Stream& stream) {
    return [&stream](std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t index) {
      return stream.normal(static_cast<std::uint64_t>(index));
    };
  };

  AttentionInputs inputs;
  switch (distribution) {
    case DataDistribution::normal:
      inputs.q = fill_tensor(q_shape, dtype, normal_of(q_stream));
      inputs.k = fill_tensor(k_shape, dtype, normal_of(k_stream));
      inputs.v = fill_tensor(v_shape, dtype, normal_of(v_stream));
      break;
    case DataDistribution::uniform: {
      auto uniform_of = [](const Stream& stream) {
        return [&stream](std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t i) {
          return stream.symmetric_uniform(static_cast<std::uint64_t>(i));
        };
      };
      inputs.q = fill_tensor(q_shape, dtype, uniform_of(q_stream));
      inputs.k = fill_tensor(k_shape, dtype, uniform_of(k_stream));
      inputs.v = fill_tensor(v_shape, dtype, uniform_of(v_stream));
      break;
    }
    case DataDistribution::large_scores:
      // K = 50 + 2.5 N and Q = 4 N give each row an offset scale * 50 * sum_d Q_d ~ N(0, 200^2)
      // and a per-key spread ~ N(0, 10^2): rows far above 0 overflow exp() without the max
      // subtraction, rows far below underflow when the running max does not start at -inf.
      inputs.q = fill_tensor(q_shape, dtype, [&](auto, auto, auto, auto, std::int64_t i) {
        return 4.0 * q_stream.normal(static_cast<std::uint64_t>(i));
      });
      inputs.k = fill_tensor(k_shape, dtype, [&](auto, auto, auto, auto, std::int64_t i) {
        return 50.0 + 2.5 * k_stream.normal(static_cast<std::uint64_t>(i));
      });
      inputs.v = fill_tensor(v_shape, dtype, normal_of(v_stream));
      break;
    case DataDistribution::peaked_softmax: {
      // Q_i = 3 K_pi(i): the score of the copied key is 3 sqrt(head_dim) (24 at D = 64), far
      // above the N(0, 9) scores of the others.
      inputs.k = fill_tensor(k_shape, dtype, normal_of(k_stream));
      const std::int64_t group = problem.group_size();
      inputs.q = fill_tensor(
          q_shape, dtype,
          [&](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d, std::int64_t) {
            const std::int64_t key = dominant_key(problem, s);
            return 3.0 * static_cast<double>(
                             widening_table(dtype)[inputs.k[k_shape.offset(b, key, h / group, d)]]);
          });
      inputs.v = fill_tensor(v_shape, dtype, normal_of(v_stream));
      break;
    }
    case DataDistribution::flat_softmax:
      // Every key of a head equals its key 0: all scores of a row tie.
      inputs.q = fill_tensor(q_shape, dtype, normal_of(q_stream));
      inputs.k = fill_tensor(
          k_shape, dtype,
          [&](std::int64_t b, std::int64_t, std::int64_t h, std::int64_t d, std::int64_t) {
            return k_stream.normal(static_cast<std::uint64_t>(k_shape.logical_index(b, 0, h, d)));
          });
      inputs.v = fill_tensor(v_shape, dtype, normal_of(v_stream));
      break;
    case DataDistribution::small_integers: {
      auto integers_of = [](const Stream& stream) {
        return [&stream](std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t i) {
          return std::floor(stream.uniform(static_cast<std::uint64_t>(i)) * 7.0) - 3.0;
        };
      };
      inputs.q = fill_tensor(q_shape, dtype, integers_of(q_stream));
      inputs.k = fill_tensor(k_shape, dtype, integers_of(k_stream));
      inputs.v = fill_tensor(v_shape, dtype, integers_of(v_stream));
      break;
    }
    case DataDistribution::value_outliers: {
      // Outliers as large as the dtype allows while an fp32 accumulator of seq_len_k terms
      // (sum_j P_j V_j with P_j <= 1) cannot overflow: half the dtype's largest finite value, or
      // float's largest / (2 seq_len_k) when that is smaller (bf16).
      const double outlier = std::min(0.5 * traits_of(dtype).max_finite,
                                      static_cast<double>(std::numeric_limits<float>::max()) /
                                          (2.0 * static_cast<double>(problem.seq_len_k)));
      inputs.q = fill_tensor(q_shape, dtype, normal_of(q_stream));
      inputs.k = fill_tensor(k_shape, dtype, normal_of(k_stream));
      inputs.v = fill_tensor(v_shape, dtype, [&](auto, auto, auto, auto, std::int64_t i) {
        const auto index = static_cast<std::uint64_t>(i);
        if (v_stream.uniform(index, 2) >= 1.0 / 64.0) return v_stream.normal(index);
        const double sign = v_stream.uniform(index, 3) < 0.5 ? -1.0 : 1.0;
        return sign * outlier * (0.5 + 0.5 * v_stream.uniform(index, 0));
      });
      break;
    }
  }
  return inputs;
}

}  // namespace attnfuzz
