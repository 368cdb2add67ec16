// SPDX-License-Identifier: BSD-3-Clause
// What every element of a case's inputs is, as a function of its tensor's stream key and its
// logical index: the draws (uniform, normal) and each distribution's formula. The host generator
// (case/data_distribution.cpp) and the CUDA one (case/device_inputs.cu) both compute through this
// header, in the same operations (core/portable_math.h), so their data agree bit for bit by
// construction. What only the host knows (stream keys from the case, injected positions) is
// computed there and handed in.
#pragma once

#include <cstdint>

#include "case/data_distribution.h"
#include "core/attention_problem.h"
#include "core/dtype.h"
#include "core/host_device.h"
#include "core/portable_math.h"
#include "core/splitmix.h"

namespace attnfuzz {

// A counter-based stream: one tensor of one case (its key: tensor_draws()), drawn at any index in
// any order.
struct InputStream {
  std::uint64_t key = 0;

  // Uniform in [0, 1), 53 random bits; `draw` tells apart up to four draws of one index.
  ATTNFUZZ_HOST_DEVICE double uniform(std::uint64_t index, std::uint64_t draw = 0) const {
    return static_cast<double>(splitmix64_step(key ^ splitmix64_step(index * 4 + draw)) >> 11) *
           0x1p-53;  // both exact: an integer below 2^53, a power of two
  }
  // Uniform in [-1, 1).
  ATTNFUZZ_HOST_DEVICE double symmetric_uniform(std::uint64_t index) const {
    return portable::sub(portable::mul(2.0, uniform(index)), 1.0);
  }
  // Standard normal by Box-Muller from two draws of the same index. 1 - u is exact (u is a
  // multiple of 2^-53 below 1), so the logarithm's argument lies in [2^-53, 1]: a normal number.
  // Branch-free, so that case/normal_draws.cpp's loops over it vectorise.
  ATTNFUZZ_HOST_DEVICE double normal(std::uint64_t index) const {
    const double radius = portable::sqrt(portable::mul(
        -2.0, portable::natural_log_of_normal(portable::sub(1.0, uniform(index, 0)))));
    return portable::mul(radius, portable::cos_two_pi(uniform(index, 1)));
  }
};

// Where element [b, s, h, d] of a tensor lies: its logical index ((b S + s) H + h) D + d, which
// keys its draws whatever the layout, and its offset in the buffer, which the strides say.
struct TensorShape {
  std::int64_t batch, seq_len, heads, head_dim;
  TensorStrides strides;

  struct Coordinates {
    std::int64_t b, s, h, d;
  };

  ATTNFUZZ_HOST_DEVICE std::int64_t logical_index(std::int64_t b, std::int64_t s, std::int64_t h,
                                                  std::int64_t d) const {
    return ((b * seq_len + s) * heads + h) * head_dim + d;
  }
  // The inverse of logical_index.
  ATTNFUZZ_HOST_DEVICE Coordinates coordinates_of(std::int64_t index) const {
    return {index / (head_dim * heads * seq_len), (index / (head_dim * heads)) % seq_len,
            (index / head_dim) % heads, index % head_dim};
  }
  ATTNFUZZ_HOST_DEVICE std::int64_t offset(std::int64_t b, std::int64_t s, std::int64_t h,
                                           std::int64_t d) const {
    return b * strides.batch + s * strides.seq + h * strides.head + d;
  }
  // Offset of the element with logical index `index`.
  ATTNFUZZ_HOST_DEVICE std::int64_t offset_of_logical(std::int64_t index) const {
    const Coordinates at = coordinates_of(index);
    return offset(at.b, at.s, at.h, at.d);
  }
  // Logical index of the element of row 0 in the same (batch, head, d) as `index`.
  ATTNFUZZ_HOST_DEVICE std::int64_t first_row_index(std::int64_t index) const {
    return index / (head_dim * heads * seq_len) * (seq_len * heads * head_dim) +
           index % (heads * head_dim);
  }
  ATTNFUZZ_HOST_DEVICE std::int64_t elements() const { return batch * seq_len * heads * head_dim; }
};

// How one tensor of a case is drawn: everything its elements depend on but their index.
struct TensorDraws {
  DataDistribution distribution = DataDistribution::normal;
  TensorRole tensor = TensorRole::query;
  InputStream stream;
  double outlier = 0.0;  // value_outliers: the magnitude of V's outliers (data_distribution.cpp)
};

// How `tensor` of the case is drawn: its stream's key, from (seed, problem, distribution, tensor),
// and the constants of the distribution's formula. Host only (data_distribution.cpp).
TensorDraws tensor_draws(const AttentionProblem& problem, DataDistribution distribution,
                         std::uint64_t seed, TensorRole tensor);

// Whether the tensor's elements are copies of another tensor's rather than draws by index:
// peaked_softmax's Q (peaked_query_value) copies K.
ATTNFUZZ_HOST_DEVICE constexpr bool copies_another_tensor(DataDistribution distribution,
                                                          TensorRole tensor) {
  return distribution == DataDistribution::peaked_softmax && tensor == TensorRole::query;
}

// The normal draws of a stream, one at a time: InputStream::normal.
struct NormalsOneByOne {
  InputStream stream;
  ATTNFUZZ_HOST_DEVICE double operator()(std::uint64_t index) const { return stream.normal(index); }
};

// The value of the element with logical index `index` of a tensor of `shape`, in double, before
// rounding to the dtype, given `normal_at`, which returns draws.stream.normal(i) for an index i
// (computed or looked up: case/normal_draws.h draws a run of them at once). Not for a tensor that
// copies_another_tensor().
template <typename NormalAt>
ATTNFUZZ_HOST_DEVICE inline double drawn_value_given(const TensorDraws& draws,
                                                     const TensorShape& shape, std::int64_t index,
                                                     const NormalAt& normal_at) {
  using portable::add;
  using portable::mul;
  const InputStream& stream = draws.stream;
  const auto at = static_cast<std::uint64_t>(index);
  switch (draws.distribution) {
    case DataDistribution::normal:
    case DataDistribution::peaked_softmax:  // K and V; Q copies K
      break;
    case DataDistribution::uniform:
      return stream.symmetric_uniform(at);
    // K = 50 + 2.5 N and Q = 4 N give each row an offset scale * 50 * sum_d Q_d ~ N(0, 200^2) and
    // a per-key spread ~ N(0, 10^2): rows far above 0 overflow exp() without the max subtraction,
    // rows far below underflow when the running max does not start at -inf.
    case DataDistribution::large_scores:
      if (draws.tensor == TensorRole::query) return mul(4.0, normal_at(at));
      if (draws.tensor == TensorRole::key) return add(50.0, mul(2.5, normal_at(at)));
      break;
    // Every key of a head equals its key 0: all scores of a row tie.
    case DataDistribution::flat_softmax:
      if (draws.tensor == TensorRole::key) {
        return normal_at(static_cast<std::uint64_t>(shape.first_row_index(index)));
      }
      break;
    case DataDistribution::small_integers:
      return portable::sub(portable::floor(mul(stream.uniform(at), 7.0)), 3.0);
    // 1 in 64 elements of V an outlier of either sign, its magnitude in [outlier / 2, outlier).
    case DataDistribution::value_outliers:
      if (draws.tensor == TensorRole::value && stream.uniform(at, 2) < 1.0 / 64.0) {
        const double sign = stream.uniform(at, 3) < 0.5 ? -1.0 : 1.0;
        return mul(mul(sign, draws.outlier), add(0.5, mul(0.5, stream.uniform(at, 0))));
      }
      break;
  }
  return normal_at(at);
}

// The same, each normal draw computed as it is needed.
ATTNFUZZ_HOST_DEVICE inline double drawn_value(const TensorDraws& draws, const TensorShape& shape,
                                               std::int64_t index) {
  return drawn_value_given(draws, shape, index, NormalsOneByOne{draws.stream});
}

// The key query row `query_row` of peaked_softmax copies, among `keys`, those it sees: one it
// sees, so that it is never masked; its last when the mask keeps the keys after the diagonal
// (`last_is_diagonal`: causal, or a right window).
ATTNFUZZ_HOST_DEVICE inline std::int64_t dominant_key_among(KeyRange keys, std::int64_t query_row,
                                                            bool last_is_diagonal) {
  if (keys.empty()) return 0;
  if (last_is_diagonal) return keys.end - 1;
  return keys.first + (query_row * 7919) % (keys.end - keys.first);
}

// peaked_softmax's Q_i = 3 K_pi(i) (`key_value`: the element of the dominant key as the dtype
// holds it): the score of the copied key is 3 sqrt(head_dim) (24 at D = 64), far above the
// N(0, 9) scores of the others.
ATTNFUZZ_HOST_DEVICE inline double peaked_query_value(float key_value) {
  return portable::mul(3.0, static_cast<double>(key_value));
}

// The stored pattern of a drawn value: rounded to float, then to the dtype.
ATTNFUZZ_HOST_DEVICE inline std::uint16_t element_bits(double value, Dtype dtype) {
  return float_to_dtype(static_cast<float>(value), dtype);
}

}  // namespace attnfuzz
