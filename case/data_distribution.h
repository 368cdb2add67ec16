// SPDX-License-Identifier: BSD-3-Clause
// Named input distributions and the deterministic generator behind them. The data of a case is a
// pure function of (seed, problem, tensor): each tensor draws from its own counter-based stream,
// so a case reproduces exactly on any machine and in any order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attention_problem.h"

namespace attnfuzz {

// X(id, what it exercises)
#define ATTNFUZZ_DATA_DISTRIBUTIONS(X)                                                          \
  X(normal, "Q, K, V ~ N(0, 1): the common case")                                               \
  X(uniform, "Q, K, V ~ U(-1, 1)")                                                              \
  X(large_scores, "scores of magnitude ~200 with a per-row offset: max subtraction, underflow") \
  X(peaked_softmax, "each query is a scaled copy of one visible key: one dominant key per row") \
  X(flat_softmax, "all keys of a head are equal: a uniform softmax, output = mean of V")        \
  X(small_integers, "integers in [-3, 3]: scores exact in every precision")                     \
  X(value_outliers, "V ~ N(0, 1) with 1 in 64 elements near the largest safe magnitude")

enum class DataDistribution : std::uint8_t {
#define ATTNFUZZ_DATA_ENUM(id, purpose) id,
  ATTNFUZZ_DATA_DISTRIBUTIONS(ATTNFUZZ_DATA_ENUM)
#undef ATTNFUZZ_DATA_ENUM
};

struct DataDistributionInfo {
  DataDistribution distribution;
  std::string_view name;
  std::string_view purpose;
};

inline constexpr DataDistributionInfo kDataDistributions[] = {
#define ATTNFUZZ_DATA_ROW(id, purpose) {DataDistribution::id, #id, purpose},
    ATTNFUZZ_DATA_DISTRIBUTIONS(ATTNFUZZ_DATA_ROW)
#undef ATTNFUZZ_DATA_ROW
};

std::optional<DataDistribution> parse_distribution(std::string_view name);
inline std::string_view distribution_name(DataDistribution distribution) {
  return kDataDistributions[static_cast<int>(distribution)].name;
}

// Special values written over a few elements of one input tensor, at positions drawn from the
// case's seed: the hostile values that distributions alone rarely produce. Each kind is chosen so
// that a correct kernel with fp32 accumulation stays within the tolerance (see the .cpp).
// X(id, what it injects)
#define ATTNFUZZ_SPECIAL_VALUES(X)                                                        \
  X(none, "nothing")                                                                      \
  X(zero, "+0")                                                                           \
  X(negative_zero, "-0")                                                                  \
  X(subnormal, "the dtype's (an fp8 tensor's format's) smallest subnormals, either sign") \
  X(large, "the largest magnitude that keeps every score and P V sum finite")             \
  X(one_ulp, "values one ulp away from 1")

enum class SpecialValue : std::uint8_t {
#define ATTNFUZZ_SPECIAL_ENUM(id, what) id,
  ATTNFUZZ_SPECIAL_VALUES(ATTNFUZZ_SPECIAL_ENUM)
#undef ATTNFUZZ_SPECIAL_ENUM
};

struct SpecialValueInfo {
  SpecialValue value;
  std::string_view name;
  std::string_view what;
};

inline constexpr SpecialValueInfo kSpecialValues[] = {
#define ATTNFUZZ_SPECIAL_ROW(id, what) {SpecialValue::id, #id, what},
    ATTNFUZZ_SPECIAL_VALUES(ATTNFUZZ_SPECIAL_ROW)
#undef ATTNFUZZ_SPECIAL_ROW
};

// An input tensor. Its value (0, 1, 2) keys the tensor's data streams: changing it changes the
// data of every case.
enum class TensorRole : std::uint8_t { query, key, value };

struct SpecialValueInjection {
  SpecialValue value = SpecialValue::none;
  TensorRole tensor = TensorRole::value;
  std::int64_t count = 0;  // elements overwritten (capped at the tensor's size)

  bool operator==(const SpecialValueInjection&) const = default;
};

// "none", or "<q|k|v>:<kind>:<count>", e.g. "v:large:4": the form matrix files and reports use.
// Parsing needs count >= 1 (decimal digits) for every kind but none; "<tensor>:none:<count>"
// reads as "none". Anything else is nullopt.
std::string format_injection(const SpecialValueInjection& injection);
std::optional<SpecialValueInjection> parse_injection(std::string_view text);
inline constexpr std::string_view kInjectionSyntax = "none or <q|k|v>:<kind>:<count>";

// Input tensors of one case, each a buffer laid out by the problem's strides, element [0, 0, 0, 0]
// first (the pointer a kernel gets). Elements outside the tensor's extent hold the dtype's poison
// NaN, so a kernel that reads them turns its output into NaN and fails:
//   - the row padding (padded strides);
//   - a guard tail after the tensor's last element, input_guard_elements() long: kInputGuardRows
//     rows of the tensor's seq stride plus one head row. A kernel that reads a whole tile of rows
//     past seq_len of the last (batch, head) (an unmasked tail tile) reads poison instead of
//     memory it does not own; past seq_len of any other (batch, head) it reads that neighbour's
//     rows, wrong but well defined.
// An fp8 tensor (problem.q_storage and the others) holds fp8 patterns, quantized from data drawn
// in the case's dtype (case/fp8_quantization.h), its row padding and guard tail the fp8 dtype's
// poison; with descale factors (problem.descaled) they come beside it, [batch][kv_heads].
struct AttentionInputs {
  std::vector<std::uint16_t> q, k, v;
  std::vector<float> q_descale, k_descale, v_descale;  // empty where a tensor has none
};

// The tensors of `inputs` and their descale factors (null where none), in host memory; no output,
// log-sum-exp or index arrays.
AttentionTensors input_tensors(const AttentionInputs& inputs);

// Rows of the guard tail: the largest query or key tile of any kernel (flash_tile_traits.h).
inline constexpr std::int64_t kInputGuardRows = 64;

// Elements of the guard tail after a tensor with these strides: one more tile of rows, and a head
// row, than the tensor's span, so that rows seq_len .. seq_len + kInputGuardRows - 1 of its last
// (batch, head) lie inside the buffer.
inline std::int64_t input_guard_elements(const TensorStrides& strides, std::int64_t head_dim) {
  return kInputGuardRows * strides.seq + head_dim;
}

// The inputs of a case: every tensor drawn from `distribution`, then `injection` applied: its
// count distinct elements of its tensor (all of them when count exceeds the tensor's size), at
// positions drawn from a stream of (seed, problem, tensor) of their own, overwritten with the
// special value (random sign where the kind has one). Pure function of its arguments.
AttentionInputs generate_inputs(const AttentionProblem& problem, DataDistribution distribution,
                                std::uint64_t seed, const SpecialValueInjection& injection = {});

// ---- for a generator elsewhere (case/device_inputs.h) ----
// generate_inputs() draws every element through case/input_draws.h (tensor_draws() there gives a
// tensor's recipe), then writes these; another generator that does the same gives the same bits.

// One element a special-value injection overwrites: its offset in the tensor's buffer and the
// pattern written there.
struct InjectedElement {
  std::int64_t offset = 0;
  std::uint16_t bits = 0;
};

// The elements generate_inputs() overwrites for `injection` (empty for none), in the order it
// writes them, when they do not depend on the drawn data: nullopt for `large` into Q or K (sized
// by the tensors' magnitudes), for a varlen or paged problem (injected before its rows are
// placed) and for fp8 inputs (injected before they are quantized).
std::optional<std::vector<InjectedElement>> data_independent_injection(
    const AttentionProblem& problem, std::uint64_t seed, const SpecialValueInjection& injection);

}  // namespace attnfuzz
