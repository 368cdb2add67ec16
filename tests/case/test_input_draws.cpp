// SPDX-License-Identifier: BSD-3-Clause
// The draws shared by the host and CUDA generators (case/input_draws.h). Moving Box-Muller onto
// the portable logarithm and cosine (core/portable_math.h) changed the host's data only where a
// value lay within a few ulp of a rounding boundary of the dtype: a copy of the generator as it
// was, with the C library's log1p and cos, still gives the same patterns but for a handful per
// million.
#include "case/input_draws.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "core/splitmix.h"
#include "support/bit_hash.h"

namespace attnfuzz {
namespace {

// ---- the generator before the portable math: its streams, keyed as data_distribution.cpp keys
// them, and its normal draw through the C library ----

std::uint64_t library_stream_key(std::uint64_t seed, const AttentionProblem& problem,
                                 DataDistribution distribution, TensorRole tensor) {
  std::uint64_t key = splitmix64_step(seed);
  for (std::uint64_t field :
       {static_cast<std::uint64_t>(problem.batch), static_cast<std::uint64_t>(problem.heads),
        static_cast<std::uint64_t>(problem.kv_heads), static_cast<std::uint64_t>(problem.seq_len_q),
        static_cast<std::uint64_t>(problem.seq_len_k), static_cast<std::uint64_t>(problem.head_dim),
        static_cast<std::uint64_t>(problem.dtype), static_cast<std::uint64_t>(problem.causal),
        static_cast<std::uint64_t>(distribution), static_cast<std::uint64_t>(tensor) + 1}) {
    key = splitmix64_step(key ^ field);
  }
  return key;
}

double library_normal(std::uint64_t key, std::uint64_t index) {
  const InputStream stream{key};  // its uniform draws are unchanged
  const double radius = std::sqrt(-2.0 * std::log1p(-stream.uniform(index, 0)));
  return radius * std::cos(2.0 * std::numbers::pi * stream.uniform(index, 1));
}

// The value the old generator drew for element `index` of `tensor` (normal and large_scores).
double library_value(DataDistribution distribution, TensorRole tensor, std::uint64_t key,
                     std::uint64_t index) {
  const double n = library_normal(key, index);
  if (distribution != DataDistribution::large_scores) return n;
  return tensor == TensorRole::query ? 4.0 * n : tensor == TensorRole::key ? 50.0 + 2.5 * n : n;
}

TensorShape shape_of(const AttentionProblem& problem, TensorRole tensor) {
  if (tensor == TensorRole::query) {
    return {problem.batch, problem.seq_len_q, problem.heads, problem.head_dim, problem.q_strides};
  }
  return {problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim,
          tensor == TensorRole::key ? problem.k_strides : problem.v_strides};
}

// 2 * 8 * 256 * 64 = 262144 elements per tensor, 786432 a case; four cases.
TEST(InputDraws, TheHostsDataIsTheLibraryBoxMullersButInAHandfulOfElementsPerMillion) {
  std::int64_t elements = 0;
  std::int64_t differing = 0;
  for (const Dtype dtype : {Dtype::fp16, Dtype::bf16}) {
    for (const DataDistribution distribution :
         {DataDistribution::normal, DataDistribution::large_scores}) {
      AttentionCase attention_case;
      attention_case.batch = 2;
      attention_case.heads = attention_case.kv_heads = 8;
      attention_case.seq_len_q = attention_case.seq_len_k = 256;
      attention_case.head_dim = 64;
      attention_case.dtype = dtype;
      attention_case.data = distribution;
      attention_case.seed = 20261122;
      const AttentionProblem problem = problem_of(attention_case);
      const AttentionInputs inputs =
          generate_inputs(problem, distribution, attention_case.seed, attention_case.injection);
      const std::vector<std::uint16_t>* buffers[] = {&inputs.q, &inputs.k, &inputs.v};
      for (const TensorRole tensor : {TensorRole::query, TensorRole::key, TensorRole::value}) {
        const TensorShape shape = shape_of(problem, tensor);
        const std::uint64_t key =
            library_stream_key(attention_case.seed, problem, distribution, tensor);
        const std::vector<std::uint16_t>& buffer = *buffers[static_cast<int>(tensor)];
        for (std::int64_t i = 0; i < shape.elements(); ++i) {
          const std::uint16_t library = element_bits(
              library_value(distribution, tensor, key, static_cast<std::uint64_t>(i)), dtype);
          differing += buffer.at(static_cast<std::size_t>(shape.offset_of_logical(i))) != library;
        }
        elements += shape.elements();
      }
    }
  }
  // A pattern changes only when the two doubles, a few ulp apart, straddle a rounding boundary
  // of the dtype: about 2^-40 of the draws in fp16. Five per million is generous.
  EXPECT_LE(differing, 5 * elements / 1'000'000) << differing << " of " << elements;
  RecordProperty("differing_elements", std::to_string(differing));
}

TEST(InputDraws, CoordinatesAndFirstRowIndexInvertTheLogicalIndex) {
  const TensorShape shape{3, 5, 2, 7, TensorStrides{500, 30, 9}};
  for (std::int64_t b = 0; b < shape.batch; ++b) {
    for (std::int64_t s = 0; s < shape.seq_len; ++s) {
      for (std::int64_t h = 0; h < shape.heads; ++h) {
        for (std::int64_t d = 0; d < shape.head_dim; ++d) {
          const std::int64_t index = shape.logical_index(b, s, h, d);
          const TensorShape::Coordinates at = shape.coordinates_of(index);
          EXPECT_EQ(at.b, b);
          EXPECT_EQ(at.s, s);
          EXPECT_EQ(at.h, h);
          EXPECT_EQ(at.d, d);
          EXPECT_EQ(shape.offset_of_logical(index), b * 500 + s * 30 + h * 9 + d);
          EXPECT_EQ(shape.first_row_index(index), shape.logical_index(b, 0, h, d));
        }
      }
    }
  }
}

// Draws that involve no library function are exactly their formulas.
TEST(InputDraws, UniformAndSmallIntegersAreTheirFormulasExactly) {
  const InputStream stream{0x123456789ABCDEFull};
  const TensorShape shape{1, 1, 1, 1, TensorStrides{1, 1, 1}};
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    const double u = stream.uniform(i);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    TensorDraws draws;
    draws.stream = stream;
    draws.distribution = DataDistribution::uniform;
    EXPECT_EQ(drawn_value(draws, shape, static_cast<std::int64_t>(i)), 2.0 * u - 1.0);
    draws.distribution = DataDistribution::small_integers;
    EXPECT_EQ(drawn_value(draws, shape, static_cast<std::int64_t>(i)), std::floor(u * 7.0) - 3.0);
  }
}

// A saved case replays the data it failed on only while the stream gives the same bits: the
// normal draws of four streams at a million indices each, hashed, as they were when first pinned
// (before Box-Muller's functions became branch-free).
// A change to the draws' arithmetic that alters any bit fails here.
TEST(InputDraws, TheNormalDrawsKeepTheirBitsSoThatSavedCasesReplayTheirData) {
  BitHash hash;
  for (const std::uint64_t key : {0ull, 1ull, 0x123456789ABCDEFull, 0xFEDCBA9876543210ull}) {
    const InputStream stream{key};
    for (std::uint64_t index = 0; index < 1'000'000; ++index) {
      hash.add(std::bit_cast<std::uint64_t>(stream.normal(index)));
    }
  }
  EXPECT_EQ(hash.value(), 0xccc5920ad0f56fc5ull) << std::hex << hash.value();
}

}  // namespace
}  // namespace attnfuzz
