// Named input distributions and the deterministic generator behind them. The data of a case is a
// pure function of (seed, problem, tensor): each tensor draws from its own counter-based stream,
// so a case reproduces exactly on any machine and in any order.
#pragma once

#include <cstdint>
#include <optional>
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

// Input tensors of one case, each a buffer laid out by the problem's strides. Elements outside
// the tensor's extent (row padding) hold the dtype's poison NaN, so a kernel that reads them
// turns its output into NaN and fails.
struct AttentionInputs {
  std::vector<std::uint16_t> q, k, v;
};

AttentionInputs generate_inputs(const AttentionProblem& problem, DataDistribution distribution,
                                std::uint64_t seed);

}  // namespace attnfuzz
