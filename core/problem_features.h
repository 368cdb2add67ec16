// SPDX-License-Identifier: BSD-3-Clause
// The attention variants a problem may use, as a table: each has a bit (what a kernel or a plugin
// declares it supports), a name for skip reasons and reports, and the test of whether a problem
// uses it. A kernel that does not declare a feature a case uses skips that case with a reason
// naming the feature, never fails it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/attention_problem.h"

namespace attnfuzz {

// X(id, bit, name, whether `problem` uses it). Bits 64 and 128 are the plugin ABI's own (the
// backward pass's).
#define ATTNFUZZ_PROBLEM_FEATURES(X)                                                    \
  X(varlen, 1u, "varlen (packed sequences through cu_seqlens)",                         \
    problem.varlen_q || problem.varlen_k)                                               \
  X(paged_kv, 2u, "paged K/V (a block table into a page pool)", problem.paged())        \
  X(sliding_window, 4u, "a sliding window (window_left/window_right)",                  \
    problem.window_left >= 0 || problem.window_right >= 0)                              \
  X(softcap, 8u, "logit soft-capping (softcap)", problem.softcap > 0.0)                 \
  X(alibi, 16u, "ALiBi biases", problem.alibi)                                          \
  X(return_lse, 32u, "the log-sum-exp output (return_lse)", problem.return_lse)         \
  X(fp8_inputs, 256u, "fp8 inputs (e4m3 or e5m2 Q, K or V, and their descale factors)", \
    problem.fp8_inputs() || problem.descale != Descale::none)

enum class ProblemFeature : std::uint32_t {
#define ATTNFUZZ_FEATURE_ENUM(id, bit, name, used) id = bit,
  ATTNFUZZ_PROBLEM_FEATURES(ATTNFUZZ_FEATURE_ENUM)
#undef ATTNFUZZ_FEATURE_ENUM
};

// Every feature's bit: what a kernel that supports them all declares.
inline constexpr std::uint32_t kAllProblemFeatures = 0
#define ATTNFUZZ_FEATURE_BIT(id, bit, name, used) | bit
    ATTNFUZZ_PROBLEM_FEATURES(ATTNFUZZ_FEATURE_BIT)
#undef ATTNFUZZ_FEATURE_BIT
    ;

struct ProblemFeatureInfo {
  ProblemFeature feature;
  std::string_view name;
  bool (*used_by)(const ProblemShape& problem);
};

inline constexpr ProblemFeatureInfo kProblemFeatures[] = {
#define ATTNFUZZ_FEATURE_ROW(id, bit, name, used) \
  {ProblemFeature::id, name, [](const ProblemShape& problem) -> bool { return used; }},
    ATTNFUZZ_PROBLEM_FEATURES(ATTNFUZZ_FEATURE_ROW)
#undef ATTNFUZZ_FEATURE_ROW
};

// The features `problem` uses, as bits.
inline std::uint32_t features_of(const ProblemShape& problem) {
  std::uint32_t used = 0;
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    if (info.used_by(problem)) used |= static_cast<std::uint32_t>(info.feature);
  }
  return used;
}

// Why `kernel`, supporting the features in `supported`, cannot run `problem`: "<kernel> does not
// support <the first feature it lacks>"; nothing when it supports every one the problem uses.
inline std::optional<std::string> unsupported_feature_reason(std::string_view kernel,
                                                             const ProblemShape& problem,
                                                             std::uint32_t supported) {
  for (const ProblemFeatureInfo& info : kProblemFeatures) {
    if (info.used_by(problem) && (supported & static_cast<std::uint32_t>(info.feature)) == 0) {
      return std::string(kernel) + " does not support " + std::string(info.name);
    }
  }
  return std::nullopt;
}

}  // namespace attnfuzz
