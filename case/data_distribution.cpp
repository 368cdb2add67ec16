// SPDX-License-Identifier: BSD-3-Clause
// Input generation. Every value is a pure function of (seed, problem shape, tensor, logical
// index): a counter-based generator (SplitMix64 steps over a stream key and the index,
// core/splitmix.h) needs no state, so tensors are independent streams and generation order never
// matters. The draws and the distributions' formulas are case/input_draws.h's, which the CUDA
// generator (case/device_inputs.cu) shares; this file keys the streams, lays the tensors out and
// injects special values.
#include "case/data_distribution.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <system_error>

#include "case/drawn_tensor_cache.h"
#include "case/fp8_quantization.h"
#include "case/input_draws.h"
#include "case/normal_draws.h"
#include "core/parallel_for.h"
#include "core/splitmix.h"

namespace attnfuzz {
namespace {

// Stands where a data stream has its distribution: the key of the injection stream ("injection"
// in ASCII), far from every distribution's index so that no data stream shares its key.
constexpr std::uint64_t kInjectionPurpose = 0x696E6A656374696Full;

// What a tensor's role adds to the key of its streams: 1 for Q, 2 for K, 3 for V.
std::uint64_t stream_key_of(TensorRole tensor) {
  return static_cast<std::uint64_t>(tensor) + 1;
}

// The key of a stream: one tensor of one case, keyed by everything that identifies the case's
// data. `purpose`: the distribution's index for data, kInjectionPurpose for injected positions.
InputStream stream_of(std::uint64_t seed, const AttentionProblem& problem, std::uint64_t purpose,
                      TensorRole tensor) {
  std::uint64_t key = splitmix64_step(seed);
  for (std::uint64_t field :
       {static_cast<std::uint64_t>(problem.batch), static_cast<std::uint64_t>(problem.heads),
        static_cast<std::uint64_t>(problem.kv_heads), static_cast<std::uint64_t>(problem.seq_len_q),
        static_cast<std::uint64_t>(problem.seq_len_k), static_cast<std::uint64_t>(problem.head_dim),
        static_cast<std::uint64_t>(problem.dtype), static_cast<std::uint64_t>(problem.causal),
        purpose, stream_key_of(tensor)}) {
    key = splitmix64_step(key ^ field);
  }
  return InputStream{key};
}

// The shapes of a case's three input tensors.
struct InputShapes {
  TensorShape q, k, v;

  explicit InputShapes(const AttentionProblem& problem)
      : q{problem.batch, problem.seq_len_q, problem.heads, problem.head_dim, problem.q_strides},
        k{problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim, problem.k_strides},
        v{problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim, problem.v_strides} {
  }
  const TensorShape& of(TensorRole role) const {
    return role == TensorRole::query ? q : role == TensorRole::key ? k : v;
  }
};

// Fills every element of `shape` with value(b, s, h, d, logical index), rounded to the dtype;
// the rest of the buffer (row padding, guard tail) holds the poison NaN.
// A buffer for a tensor of `shape`, poisoned: its rows, row padding and guard tail.
std::vector<std::uint16_t> poisoned_tensor(const TensorShape& shape, Dtype dtype) {
  const std::int64_t span =
      span_elements(shape.strides, shape.batch, shape.seq_len, shape.heads, shape.head_dim);
  const std::int64_t guard = input_guard_elements(shape.strides, shape.head_dim);
  return std::vector<std::uint16_t>(static_cast<std::size_t>(span + guard),
                                    traits_of(dtype).poison_bits);
}

template <typename ValueOf>
std::vector<std::uint16_t> fill_tensor(const TensorShape& shape, Dtype dtype, ValueOf value_of) {
  std::vector<std::uint16_t> buffer = poisoned_tensor(shape, dtype);
  parallel_for(shape.batch * shape.seq_len, [&](std::int64_t row) {
    const std::int64_t b = row / shape.seq_len;
    const std::int64_t s = row % shape.seq_len;
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      for (std::int64_t d = 0; d < shape.head_dim; ++d) {
        buffer[shape.offset(b, s, h, d)] =
            element_bits(value_of(b, s, h, d, shape.logical_index(b, s, h, d)), dtype);
      }
    }
  });
  return buffer;
}

// The key a query row of `peaked_softmax` copies (dominant_key_among). A row past its sequence's
// end (varlen) copies as if its sequence were the longest.
std::int64_t dominant_key(const AttentionProblem& problem, std::int64_t b, std::int64_t query_row) {
  const KeyRange keys =
      query_row < problem.seq_len_q_of(b)
          ? problem.visible_keys_of(b, query_row)
          : visible_keys(problem, query_row, problem.seq_len_q, problem.seq_len_k);
  return dominant_key_among(keys, query_row, problem.causal || problem.window_right >= 0);
}

// Whether most elements of the tensor are normal draws at their own index, so that drawing a row's
// normals at once (case/normal_draws.h) saves time. Only a matter of speed: drawn_value_given()
// decides what each element is, and reads a normal from the run only where it draws one.
bool draws_own_index_normals(const TensorDraws& draws) {
  switch (draws.distribution) {
    case DataDistribution::uniform:
    case DataDistribution::small_integers:
      return false;
    case DataDistribution::flat_softmax:
      return draws.tensor != TensorRole::key;  // K repeats its row 0
    case DataDistribution::normal:
    case DataDistribution::large_scores:
    case DataDistribution::peaked_softmax:
    case DataDistribution::value_outliers:
      return true;
  }
  return true;
}

// Indices drawn at once: long enough for the vector loop, short enough to stay in L1.
constexpr std::int64_t kNormalsRun = 1024;

// Normal draws at indices [first, first + normals.size()) looked up, any other computed.
struct NormalsOfARun {
  InputStream stream;
  std::uint64_t first;
  std::span<const double> normals;
  double operator()(std::uint64_t index) const {
    return index - first < normals.size() ? normals[index - first] : stream.normal(index);
  }
};

// A tensor drawn by index: every element drawn_value() of its draws, rounded to the dtype, in
// logical order (kept on this thread for the next case with the same data: drawn_tensor_cache.h),
// then placed where the strides say.
std::vector<std::uint16_t> draw_tensor(const AttentionProblem& problem,
                                       DataDistribution distribution, std::uint64_t seed,
                                       const InputShapes& shapes, TensorRole tensor) {
  const TensorDraws draws = tensor_draws(problem, distribution, seed, tensor);
  const TensorShape& shape = shapes.of(tensor);
  const auto logical = drawn_in_logical_order(DrawnTensorKey(draws, shape, problem.dtype), [&] {
    std::vector<std::uint16_t> patterns(static_cast<std::size_t>(shape.elements()));
    const std::int64_t row = shape.heads * shape.head_dim;
    const bool by_runs = draws_own_index_normals(draws);
    parallel_for(shape.batch * shape.seq_len, [&](std::int64_t first_row) {
      std::array<double, kNormalsRun> normals;
      const std::int64_t row_end = (first_row + 1) * row;
      for (std::int64_t first = first_row * row; first < row_end; first += kNormalsRun) {
        const std::int64_t end = std::min(first + kNormalsRun, row_end);
        const std::span<double> run(normals.data(),
                                    by_runs ? static_cast<std::size_t>(end - first) : 0);
        draw_normals(draws.stream, static_cast<std::uint64_t>(first), run);
        const NormalsOfARun normal_at{draws.stream, static_cast<std::uint64_t>(first), run};
        for (std::int64_t index = first; index < end; ++index) {
          patterns[static_cast<std::size_t>(index)] =
              element_bits(drawn_value_given(draws, shape, index, normal_at), problem.dtype);
        }
      }
    });
    return patterns;
  });
  const std::vector<std::uint16_t>& patterns = *logical;
  std::vector<std::uint16_t> buffer = poisoned_tensor(shape, problem.dtype);
  for (std::int64_t b = 0; b < shape.batch; ++b) {
    for (std::int64_t s = 0; s < shape.seq_len; ++s) {
      for (std::int64_t h = 0; h < shape.heads; ++h) {
        std::copy_n(patterns.begin() + shape.logical_index(b, s, h, 0), shape.head_dim,
                    buffer.begin() + shape.offset(b, s, h, 0));
      }
    }
  }
  return buffer;
}

// peaked_softmax's Q: each row a copy of its dominant key (peaked_query_value), `keys` drawn.
std::vector<std::uint16_t> copy_dominant_keys(const AttentionProblem& problem,
                                              const InputShapes& shapes,
                                              const std::vector<std::uint16_t>& keys) {
  const std::span<const float> widen = widening_table(problem.dtype);
  const std::int64_t group = problem.group_size();
  return fill_tensor(
      shapes.q, problem.dtype,
      [&](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d, std::int64_t) {
        const std::int64_t key = dominant_key(problem, b, s);
        return peaked_query_value(widen[keys[shapes.k.offset(b, key, h / group, d)]]);
      });
}

// Every tensor drawn from `distribution`, before any injection.
AttentionInputs draw_inputs(const AttentionProblem& problem, DataDistribution distribution,
                            std::uint64_t seed, const InputShapes& shapes) {
  AttentionInputs inputs;
  inputs.k = draw_tensor(problem, distribution, seed, shapes, TensorRole::key);
  inputs.v = draw_tensor(problem, distribution, seed, shapes, TensorRole::value);
  inputs.q = copies_another_tensor(distribution, TensorRole::query)
                 ? copy_dominant_keys(problem, shapes, inputs.k)
                 : draw_tensor(problem, distribution, seed, shapes, TensorRole::query);
  return inputs;
}

// ---- special values ----

constexpr std::string_view kTensorRoleNames[] = {"q", "k", "v"};  // by TensorRole

// The largest |element| and the largest row norm |X_i|_2 (over head_dim) of a tensor.
struct TensorMagnitude {
  double max_element = 0.0;
  double max_row_norm = 0.0;
};

TensorMagnitude magnitude_of(const std::vector<std::uint16_t>& buffer, const TensorShape& shape,
                             Dtype dtype) {
  const std::span<const float> widen = widening_table(dtype);
  TensorMagnitude magnitude;
  for (std::int64_t row = 0; row < shape.elements() / shape.head_dim; ++row) {
    const std::uint16_t* elements = &buffer[shape.offset_of_logical(row * shape.head_dim)];
    double squares = 0.0;
    for (std::int64_t d = 0; d < shape.head_dim; ++d) {
      const double value = std::fabs(widen[elements[d]]);
      magnitude.max_element = std::max(magnitude.max_element, value);
      squares += value * value;
    }
    magnitude.max_row_norm = std::max(magnitude.max_row_norm, std::sqrt(squares));
  }
  return magnitude;
}

// The dtype's largest value not above `limit` (limit >= 0, below the dtype's largest finite).
std::uint16_t round_down_to_dtype(double limit, Dtype dtype) {
  std::uint16_t bits = float_to_dtype(static_cast<float>(limit), dtype);
  if (dtype_to_float(bits, dtype) > limit) --bits;  // positive patterns order like their values
  return bits;
}

// The magnitude `large` injects into `role` (the reasoning per tensor is in the comments), as a
// positive pattern of the dtype. `own` and `other` are the magnitudes of the tensor injected into
// and of its partner in the scores (K for Q, Q for K) before the injection.
std::uint16_t large_bits(const AttentionProblem& problem, TensorRole role, std::int64_t count,
                         const TensorMagnitude& own, const TensorMagnitude& other) {
  const DtypeTraits& traits = traits_of(problem.dtype);
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  if (role == TensorRole::value) {
    // V: the value_outliers rule. The accumulator sums seq_len_k terms P_j V_jd with unnormalised
    // P_j <= 1: with every |V_jd| at most float's largest / (2 seq_len_k), it stays below half of
    // float's largest whatever number of elements is injected, and the output, a weighted mean of
    // V, within half the dtype's range.
    return round_down_to_dtype(std::min(0.5 * traits.max_finite,
                                        kFloatMax / (2.0 * static_cast<double>(problem.seq_len_k))),
                               problem.dtype);
  }
  // Q or K: large scores are harmless to a correct kernel (it subtracts the row maximum; the
  // tolerance's score term grows with scale |Q_i| |K_j|). What must stay finite is every sum that
  // forms a score: the kernel's fp32 dot product Q_i . K_j and its scaled value, and in the plain
  // same-precision reference of the FlashAttention rule scale * Q rounded to the dtype and the
  // score rounded to the dtype (in fp16 a score beyond 65504 would be inf there, its row NaN).
  // So |Q_i . K_j| * max(scale, 1) must stay below half the dtype's largest value (a dtype
  // range within fp32's, leaving room for s - max). By Cauchy-Schwarz the elements not injected
  // contribute at most max |Q_i| max |K_j| (row norms), and each injected element at most L times
  // the partner's largest element, with at most min(count, head_dim) injected elements in a row:
  //   L = (budget - max|Q_i| max|K_j|) / (min(count, D) max|partner|),  budget = max_finite / 2
  //       / max(scale, 1),
  // capped at the budget (scale * Q in range) and at least 1. In bf16 L is ~1e38 / count; in fp16
  // a few thousand for N(0, 1) data.
  const double budget = 0.5 * traits.max_finite / std::max(problem.softmax_scale, 1.0);
  const double in_one_row = static_cast<double>(std::min(count, problem.head_dim));
  double limit = other.max_element > 0.0 ? (budget - own.max_row_norm * other.max_row_norm) /
                                               (in_one_row * other.max_element)
                                         : budget;
  // A partner stored as descaled fp8 (case/fp8_quantization.h) enters the kernel's fp32 dot
  // product as its patterns' values, up to the format's largest in each element, its factor
  // applied after: that sum must stay below half of float's largest too. (When the injected
  // tensor is fp8 itself, its own patterns are at most the format's largest: no limit needed.)
  const InputStorage own_storage =
      role == TensorRole::query ? problem.q_storage : problem.k_storage;
  const InputStorage partner = role == TensorRole::query ? problem.k_storage : problem.q_storage;
  if (problem.descaled(partner) && own_storage == InputStorage::same) {
    const double stored_max = traits_of(storage_dtype(partner, problem.dtype)).max_finite;
    const double stored_row_norm = stored_max * std::sqrt(static_cast<double>(problem.head_dim));
    limit = std::min(
        limit, (0.5 * kFloatMax - own.max_row_norm * stored_row_norm) / (in_one_row * stored_max));
  }
  return round_down_to_dtype(std::min(std::max(limit, 1.0), budget), problem.dtype);
}

// The pattern of one injected element; `negative` and `above` are fair coins of its draw.
std::uint16_t special_bits(SpecialValue kind, Dtype dtype, std::uint16_t large, bool negative,
                           bool above) {
  // The top bit: 15 in fp16 and bf16, 7 in the fp8 formats.
  const auto sign_bit = static_cast<std::uint16_t>(1u << (traits_of(dtype).width_bits - 1));
  const std::uint16_t sign = negative ? sign_bit : 0u;
  switch (kind) {
    case SpecialValue::none:
      break;
    // +0 and -0: a product of 0, a term of 0; nothing can overflow or lose accuracy. -0 catches
    // kernels that test zero by its bit pattern, or take -0 for a negative number.
    case SpecialValue::zero:
      return 0x0000u;
    case SpecialValue::negative_zero:
      return sign_bit;
    // The smallest subnormal (pattern 1): its products with other inputs are exact in fp32, or
    // (bf16) fall below fp32's own subnormals, an absolute error under 2^-149, far inside every
    // bound (the bound's eta terms cover outputs in the subnormal range). Catches kernels that
    // decode subnormal inputs wrongly. An fp8 tensor gets its format's (written after the
    // quantization, which would flush a 16-bit one to zero): at least 2^-16 times its factor.
    case SpecialValue::subnormal:
      return static_cast<std::uint16_t>(sign | 0x0001u);
    // See large_bits: as large as keeps every sum finite for a correct kernel.
    case SpecialValue::large:
      return static_cast<std::uint16_t>(sign | large);
    // 1 + 2u (next above 1) or 1 - u (next below): the last significand bit matters. Magnitude 1
    // fits every sum; catches inputs converted through a format with fewer significand bits.
    case SpecialValue::one_ulp: {
      const std::uint16_t one = float_to_dtype(1.0f, dtype);
      return static_cast<std::uint16_t>(sign | (above ? one + 1 : one - 1));
    }
  }
  return 0;
}

// The elements the injection overwrites (none for none), as patterns of `dtype`, `large` the
// pattern of its kind `large`.
// Positions: `count` distinct logical indices by Floyd's algorithm, one draw per step j in
// [n - count, n) of the tensor's injection stream.
std::vector<InjectedElement> injected_elements(const AttentionProblem& problem, std::uint64_t seed,
                                               const SpecialValueInjection& injection,
                                               const TensorShape& shape, Dtype dtype,
                                               std::uint16_t large) {
  if (injection.value == SpecialValue::none || injection.count <= 0) return {};
  const std::int64_t n = shape.elements();
  const std::int64_t count = std::min(injection.count, n);
  const InputStream stream = stream_of(seed, problem, kInjectionPurpose, injection.tensor);
  std::vector<InjectedElement> elements;
  elements.reserve(static_cast<std::size_t>(count));
  std::vector<bool> chosen(static_cast<std::size_t>(n), false);
  for (std::int64_t j = n - count; j < n; ++j) {
    const auto step = static_cast<std::uint64_t>(j);
    std::int64_t position = std::min(
        j, static_cast<std::int64_t>(stream.uniform(step, 0) * static_cast<double>(j + 1)));
    if (chosen[static_cast<std::size_t>(position)]) position = j;
    chosen[static_cast<std::size_t>(position)] = true;
    elements.push_back({shape.offset_of_logical(position),
                        special_bits(injection.value, dtype, large, stream.uniform(step, 1) < 0.5,
                                     stream.uniform(step, 2) < 0.5)});
  }
  return elements;
}

// Whether the injection's patterns depend on the drawn tensors: `large` into Q or K.
bool depends_on_data(const SpecialValueInjection& injection) {
  return injection.value == SpecialValue::large && injection.tensor != TensorRole::value;
}

// Overwrites the injection's elements (injected_elements).
void inject(const AttentionProblem& problem, std::uint64_t seed,
            const SpecialValueInjection& injection, const InputShapes& shapes, Dtype dtype,
            AttentionInputs& inputs) {
  if (injection.value == SpecialValue::none || injection.count <= 0) return;
  std::vector<std::uint16_t>* buffers[] = {&inputs.q, &inputs.k, &inputs.v};  // by TensorRole
  std::vector<std::uint16_t>& buffer = *buffers[static_cast<int>(injection.tensor)];
  const TensorShape& shape = shapes.of(injection.tensor);
  const std::int64_t count = std::min(injection.count, shape.elements());

  std::uint16_t large = 0;
  if (depends_on_data(injection)) {
    const TensorRole partner =
        injection.tensor == TensorRole::query ? TensorRole::key : TensorRole::query;
    large = large_bits(
        problem, injection.tensor, count, magnitude_of(buffer, shape, problem.dtype),
        magnitude_of(*buffers[static_cast<int>(partner)], shapes.of(partner), problem.dtype));
  } else if (injection.value == SpecialValue::large) {
    large = large_bits(problem, injection.tensor, count, {}, {});
  }
  for (const InjectedElement& element :
       injected_elements(problem, seed, injection, shape, dtype, large)) {
    buffer[static_cast<std::size_t>(element.offset)] = element.bits;
  }
}

}  // namespace

std::string format_injection(const SpecialValueInjection& injection) {
  if (injection.value == SpecialValue::none) return "none";
  return std::string(kTensorRoleNames[static_cast<int>(injection.tensor)]) + ":" +
         std::string(kSpecialValues[static_cast<int>(injection.value)].name) + ":" +
         std::to_string(injection.count);
}

std::optional<SpecialValueInjection> parse_injection(std::string_view text) {
  if (text == "none") return SpecialValueInjection{};
  const std::size_t first = text.find(':');
  const std::size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::string_view tensor = text.substr(0, first);
  const std::string_view kind = text.substr(first + 1, second - first - 1);
  const std::string_view count = text.substr(second + 1);

  SpecialValueInjection injection;
  const auto role = std::find(std::begin(kTensorRoleNames), std::end(kTensorRoleNames), tensor);
  const auto value = std::find_if(std::begin(kSpecialValues), std::end(kSpecialValues),
                                  [&](const SpecialValueInfo& info) { return info.name == kind; });
  if (role == std::end(kTensorRoleNames) || value == std::end(kSpecialValues)) return std::nullopt;
  injection.tensor = static_cast<TensorRole>(role - std::begin(kTensorRoleNames));
  injection.value = value->value;
  // Decimal digits only: no sign, no space, no trailing text.
  if (count.empty() ||
      !std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const auto [end, error] =
      std::from_chars(count.data(), count.data() + count.size(), injection.count);
  if (error != std::errc() || end != count.data() + count.size()) return std::nullopt;
  if (injection.value == SpecialValue::none) return SpecialValueInjection{};
  if (injection.count < 1) return std::nullopt;
  return injection;
}

std::optional<DataDistribution> parse_distribution(std::string_view name) {
  for (const DataDistributionInfo& info : kDataDistributions) {
    if (info.name == name) return info.distribution;
  }
  return std::nullopt;
}

namespace {

// The problem as dense tensors: every sequence seq_len_q (seq_len_k) rows long, compact BSHD,
// neither packed nor paged. A varlen or paged case draws its data in this shape, then
// place_rows() moves each sequence's rows to where the problem keeps them.
AttentionProblem dense_form(const AttentionProblem& problem) {
  AttentionProblem dense = problem;
  dense.seq_lens_q.clear();
  dense.seq_lens_k.clear();
  dense.page_size = 0;
  return with_layout(std::move(dense), Layout::bshd, 0);
}

// A buffer for a tensor that spans `span` elements, poisoned, with its guard tail.
// A packed tensor's tail holds one longest sequence more: a kernel that reads a sequence from the
// wrong offset (one sequence on) reads poison there, not memory it does not own.
std::vector<std::uint16_t> poisoned_buffer(std::int64_t span, const TensorStrides& strides,
                                           std::int64_t packed_longest,
                                           const AttentionProblem& problem, Dtype dtype) {
  return std::vector<std::uint16_t>(
      static_cast<std::size_t>(span + input_guard_elements(strides, problem.head_dim) +
                               packed_longest * strides.seq),
      traits_of(dtype).poison_bits);
}

// Copies the rows that exist (row s < the sequence's length) of a dense tensor into `placed`:
// `offset(b, s)` is where the problem keeps row s of sequence b.
template <typename Offset, typename LengthOf>
void copy_rows(const std::vector<std::uint16_t>& dense, const TensorShape& shape,
               std::int64_t heads_stride, Offset offset, LengthOf length_of,
               std::vector<std::uint16_t>& placed) {
  for (std::int64_t b = 0; b < shape.batch; ++b) {
    for (std::int64_t s = 0; s < length_of(b); ++s) {
      for (std::int64_t h = 0; h < shape.heads; ++h) {
        std::copy_n(dense.begin() + shape.offset(b, s, h, 0), shape.head_dim,
                    placed.begin() + offset(b, s) + h * heads_stride);
      }
    }
  }
}

// The inputs of a varlen or paged problem from those of its dense form. Rows past a sequence's
// end, the unused rows of its last page and the pool's spare page hold poison.
AttentionInputs place_rows(const AttentionProblem& problem, const AttentionProblem& dense_problem,
                           const AttentionInputs& dense) {
  const InputShapes shapes(dense_problem);
  AttentionInputs placed;
  const std::int64_t longest_q = problem.varlen_q ? problem.seq_len_q : 0;
  const std::int64_t longest_k = problem.varlen_k && !problem.paged() ? problem.seq_len_k : 0;
  placed.q =
      poisoned_buffer(q_span(problem), problem.q_strides, longest_q, problem, problem.q_dtype());
  placed.k =
      poisoned_buffer(k_span(problem), problem.k_strides, longest_k, problem, problem.k_dtype());
  placed.v =
      poisoned_buffer(v_span(problem), problem.v_strides, longest_k, problem, problem.v_dtype());
  placed.q_descale = dense.q_descale;
  placed.k_descale = dense.k_descale;
  placed.v_descale = dense.v_descale;
  const auto query_length = [&](std::int64_t b) { return problem.seq_len_q_of(b); };
  const auto key_length = [&](std::int64_t b) { return problem.seq_len_k_of(b); };
  copy_rows(
      dense.q, shapes.q, problem.q_strides.head,
      [&](std::int64_t b, std::int64_t s) { return problem.q_row_offset(b, s); }, query_length,
      placed.q);
  copy_rows(
      dense.k, shapes.k, problem.k_strides.head,
      [&](std::int64_t b, std::int64_t s) { return problem.k_row_offset(b, s); }, key_length,
      placed.k);
  copy_rows(
      dense.v, shapes.v, problem.v_strides.head,
      [&](std::int64_t b, std::int64_t s) { return problem.v_row_offset(b, s); }, key_length,
      placed.v);
  return placed;
}

// The fp8 tensors of `inputs`, drawn in the case's dtype, quantized (case/fp8_quantization.h).
void quantize_fp8_tensors(const AttentionProblem& problem, const InputShapes& shapes,
                          AttentionInputs& inputs) {
  const struct {
    TensorRole role;
    InputStorage storage;
    std::vector<std::uint16_t>& tensor;
    std::vector<float>& descale;
    std::int64_t group_size;
  } tensors[] = {
      {TensorRole::query, problem.q_storage, inputs.q, inputs.q_descale, problem.group_size()},
      {TensorRole::key, problem.k_storage, inputs.k, inputs.k_descale, 1},
      {TensorRole::value, problem.v_storage, inputs.v, inputs.v_descale, 1}};
  for (const auto& tensor : tensors) {
    if (tensor.storage == InputStorage::same) continue;
    QuantizedTensor quantized =
        quantize_to_fp8(tensor.tensor, shapes.of(tensor.role), problem.dtype,
                        storage_dtype(tensor.storage, problem.dtype), problem.descale,
                        problem.kv_heads, tensor.group_size);
    tensor.tensor = std::move(quantized.patterns);
    tensor.descale = std::move(quantized.descale);
  }
}

// The data of a problem laid out as its strides say (dense): drawn and injected in the case's
// dtype, then the fp8 tensors quantized (an fp8 tensor's subnormals injected after that).
AttentionInputs generate_dense_inputs(const AttentionProblem& problem,
                                      const AttentionProblem& shape_problem,
                                      DataDistribution distribution, std::uint64_t seed,
                                      const SpecialValueInjection& injection) {
  const InputShapes shapes(shape_problem);
  AttentionInputs inputs = draw_inputs(problem, distribution, seed, shapes);
  // Every kind is injected into the drawn data before the quantization (a large value then makes
  // the group's factor, and most of the group subnormal), but the subnormals of an fp8 tensor,
  // which are its format's, written over the quantized patterns.
  const Dtype injected_dtype = injection.tensor == TensorRole::query ? problem.q_dtype()
                               : injection.tensor == TensorRole::key ? problem.k_dtype()
                                                                     : problem.v_dtype();
  const bool after_quantization =
      injection.value == SpecialValue::subnormal && is_fp8(injected_dtype);
  if (!after_quantization) inject(problem, seed, injection, shapes, problem.dtype, inputs);
  quantize_fp8_tensors(problem, shapes, inputs);
  if (after_quantization) inject(problem, seed, injection, shapes, injected_dtype, inputs);
  return inputs;
}

}  // namespace

TensorDraws tensor_draws(const AttentionProblem& problem, DataDistribution distribution,
                         std::uint64_t seed, TensorRole tensor) {
  TensorDraws draws;
  draws.distribution = distribution;
  draws.tensor = tensor;
  draws.stream = stream_of(seed, problem, static_cast<std::uint64_t>(distribution), tensor);
  if (distribution == DataDistribution::value_outliers) {
    // Outliers as large as the dtype allows while an fp32 accumulator of seq_len_k terms
    // (sum_j P_j V_j with P_j <= 1) cannot overflow: half the dtype's largest finite value, or
    // float's largest / (2 seq_len_k) when that is smaller (bf16).
    draws.outlier = std::min(0.5 * traits_of(problem.dtype).max_finite,
                             static_cast<double>(std::numeric_limits<float>::max()) /
                                 (2.0 * static_cast<double>(problem.seq_len_k)));
  }
  return draws;
}

std::optional<std::vector<InjectedElement>> data_independent_injection(
    const AttentionProblem& problem, std::uint64_t seed, const SpecialValueInjection& injection) {
  if (problem.varlen_q || problem.varlen_k || problem.paged() || problem.fp8_inputs() ||
      depends_on_data(injection)) {
    return std::nullopt;
  }
  const InputShapes shapes(problem);
  const TensorShape& shape = shapes.of(injection.tensor);
  const std::uint16_t large = injection.value == SpecialValue::large
                                  ? large_bits(problem, injection.tensor,
                                               std::min(injection.count, shape.elements()), {}, {})
                                  : std::uint16_t{0};
  return injected_elements(problem, seed, injection, shape, problem.dtype, large);
}

AttentionTensors input_tensors(const AttentionInputs& inputs) {
  const auto data_or_null = [](const std::vector<float>& factors) {
    return factors.empty() ? nullptr : factors.data();
  };
  AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
  tensors.q_descale = data_or_null(inputs.q_descale);
  tensors.k_descale = data_or_null(inputs.k_descale);
  tensors.v_descale = data_or_null(inputs.v_descale);
  tensors.q_elements = inputs.q.size();
  tensors.k_elements = inputs.k.size();
  tensors.v_elements = inputs.v.size();
  return tensors;
}

AttentionInputs generate_inputs(const AttentionProblem& problem, DataDistribution distribution,
                                std::uint64_t seed, const SpecialValueInjection& injection) {
  if (problem.varlen_q || problem.varlen_k || problem.paged()) {
    const AttentionProblem dense = dense_form(problem);
    return place_rows(problem, dense,
                      generate_dense_inputs(problem, dense, distribution, seed, injection));
  }
  return generate_dense_inputs(problem, problem, distribution, seed, injection);
}

}  // namespace attnfuzz
