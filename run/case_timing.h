// SPDX-License-Identifier: BSD-3-Clause
// Where a case's time went, step by step: the figures a report's `timing` object holds and the
// run's one-line summary adds up. A step that did not run takes 0 s.
#pragma once

#include <string_view>

namespace attnfuzz {

// X(member, always in a report (older reports lack the others), what the step is)
#define ATTNFUZZ_CASE_TIMING(X)                                                                \
  X(generate_seconds, false, "drawing the inputs from the case's seed")                        \
  X(kernel_seconds, true, "the kernel's first run, its inputs' and output's staging included") \
  X(repeat_seconds, true, "the runs after it (--repeats), for the determinism check")          \
  X(transfer_seconds, false,                                                                   \
    "copies between host and device memory (within the kernel's and the repeats' times)")      \
  X(reference_seconds, false, "the float64 oracle")                                            \
  X(plain_seconds, false, "the plain same-precision reference")                                \
  X(compare_seconds, false,                                                                    \
    "the comparison: every element's bound, the FlashAttention rule, the bias test")           \
  X(oracle_seconds, true, "the reference, the plain reference and the comparison together")    \
  X(backward_seconds, false,                                                                   \
    "the backward pass's check: its oracle, the kernel's runs and the comparison")             \
  X(total_seconds, true,                                                                       \
    "the whole case (for a lost worker, from handing the case out to the loss)")

struct CaseTiming {
#define ATTNFUZZ_TIMING_MEMBER(member, always, what) double member = 0.0;
  ATTNFUZZ_CASE_TIMING(ATTNFUZZ_TIMING_MEMBER)
#undef ATTNFUZZ_TIMING_MEMBER
};

// A step's member of CaseTiming.
using CaseTimingMember = double CaseTiming::*;

struct CaseTimingStep {
  std::string_view name;
  CaseTimingMember member;
  bool always_reported;
  std::string_view what;
};

inline constexpr CaseTimingStep kCaseTimingSteps[] = {
#define ATTNFUZZ_TIMING_ROW(member, always, what) {#member, &CaseTiming::member, always, what},
    ATTNFUZZ_CASE_TIMING(ATTNFUZZ_TIMING_ROW)
#undef ATTNFUZZ_TIMING_ROW
};

}  // namespace attnfuzz
