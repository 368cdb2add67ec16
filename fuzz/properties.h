// SPDX-License-Identifier: BSD-3-Clause
// The property-based engine: RapidCheck searches the case space for a case that breaks a
// property of the kernel under test, then shrinks it to the smallest failing shape and simplest
// data. One property compares with the oracle; the others are metamorphic (two runs of the kernel
// that must agree), so they need no oracle and scale to large shapes, or, for the backward pass,
// relations among its gradients that the oracle's bound only sizes.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "case/attention_case.h"
#include "fuzz/case_generator.h"
#include "run/case_runner.h"

namespace attnfuzz {

// Which pass a property judges. A forward property runs the case as drawn (matches_oracle runs a
// "backward": true case's backward too); a backward one (fuzz/backward_properties.h) runs the
// case's backward, whatever its flag says.
enum class PropertyPass { forward, backward };

// X(id, pass, the sentence it checks)
#define ATTNFUZZ_PROPERTIES(X)                                                                   \
  X(matches_oracle, forward, "the output matches the float64 oracle within the tolerance")       \
  X(key_value_permutation, forward,                                                              \
    "permuting key/value pairs leaves a non-causal output unchanged")                            \
  X(key_shift, forward, "adding one vector to every key of a head leaves the output unchanged")  \
  X(batch_head_independence, forward,                                                            \
    "changing one batch's or one head's data changes only its output")                           \
  X(gqa_equals_mha, forward,                                                                     \
    "GQA equals MHA with each key/value head repeated for its query heads")                      \
  X(causal_future_independence, forward, "a causal row does not depend on keys it must not see") \
  X(value_scaling, forward, "scaling V by a power of two scales the output exactly")             \
  X(determinism, forward, "the same input twice gives bitwise identical output")                 \
  X(padding_nan_independence, forward,                                                           \
    "NaN in the inputs' padding and beyond their end changes nothing")                           \
  X(backward_gradient_sums, backward,                                                            \
    "dK sums to zero over the keys, dV to dO over the rows, and q.dQ to k.dK over a group")      \
  X(backward_key_permutation, backward,                                                          \
    "permuting key/value pairs permutes dK's and dV's rows and leaves dQ unchanged")             \
  X(backward_grad_output_scaling, backward, "doubling dO doubles dQ, dK and dV")

enum class Property {
#define ATTNFUZZ_PROPERTY_ENUM(id, pass, sentence) id,
  ATTNFUZZ_PROPERTIES(ATTNFUZZ_PROPERTY_ENUM)
#undef ATTNFUZZ_PROPERTY_ENUM
};

struct PropertyInfo {
  Property property;
  PropertyPass pass;
  std::string_view name;
  std::string_view sentence;
};

inline constexpr PropertyInfo kProperties[] = {
#define ATTNFUZZ_PROPERTY_ROW(id, pass, sentence) {Property::id, PropertyPass::pass, #id, sentence},
    ATTNFUZZ_PROPERTIES(ATTNFUZZ_PROPERTY_ROW)
#undef ATTNFUZZ_PROPERTY_ROW
};

std::optional<Property> parse_property(std::string_view name);
PropertyPass pass_of(Property property);

// What checking a property on one case found: held, failed (with what went wrong), or not judged,
// when the case could not show the property either way: the kernel cannot run it here (no GPU,
// an unsupported shape, out of memory), or the property does not apply to it (a causal case for
// the permutation property, a case with a variant for the metamorphic ones). A property of which
// no case was judged has not been shown to hold.
struct PropertyCheck {
  bool judged = false;
  std::optional<std::string> failure;  // judged and failed: why

  // A judged check: held when `why` is empty.
  PropertyCheck(std::optional<std::string> why) : judged(true), failure(std::move(why)) {}
  static PropertyCheck not_judged() { return PropertyCheck(); }
  bool held() const { return judged && !failure; }

 private:
  PropertyCheck() = default;
};

PropertyCheck check_property(Property property, const AttentionCase& attention_case,
                             const RunSettings& settings);

// How the search checks a property on a case: check_property in this process, or a contained
// call (fuzz/contained_property_check.h). Returns what check_property returns.
using PropertyChecker =
    std::function<PropertyCheck(Property property, const AttentionCase& attention_case)>;

struct PropertySettings {
  RunSettings run;
  PropertyChecker checker;  // empty: check_property in this process
  // What the kernel runs, asked where the checks run (ContainedPropertyCheck::reach); empty:
  // probe_kernel_reach in this process.
  std::function<KernelReach()> reach_probe;
  double budget_seconds = 30.0;      // wall time for the whole search
  std::uint64_t seed = 1;            // RapidCheck's seed for the first round
  std::vector<Property> properties;  // empty: all
  std::filesystem::path regressions_dir = "corpus/regressions";  // where minimal cases go
  int tests_per_round = 10;
  bool stop_at_first_failure = false;  // end the whole search when any property fails
};

struct PropertyOutcome {
  Property property;
  int tests = 0;   // cases checked
  int judged = 0;  // of those, the ones that could show the property either way
  double seconds = 0.0;
  double seconds_to_failure = 0.0;  // from the start of the search; meaningful when failed
  std::optional<AttentionCase> minimal_case;  // the shrunk counterexample
  std::string message;
  std::filesystem::path saved_to;  // the regression file written for it
};

// Runs the selected properties in rounds of `tests_per_round` cases until the budget is spent,
// sharing it by time (fuzz/property_schedule.h: the oracle comparison half, the others the rest),
// each drawing only cases the kernel runs (fuzz/kernel_reach.h); a property stops at its first
// failure (shrunk, printed with a replay command, saved). Logs to `log` as it goes.
std::vector<PropertyOutcome> run_properties(const PropertySettings& settings, std::ostream& log);

}  // namespace attnfuzz
