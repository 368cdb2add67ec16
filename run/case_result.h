// SPDX-License-Identifier: BSD-3-Clause
// The outcome of one case: what ran, the verdict and why, the error figures and the timings.
// Reports (stdout table, JSON, JUnit) are all rendered from this record.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "case/attention_case.h"
#include "oracle/backward_comparison.h"
#include "oracle/tolerance.h"
#include "perf/kernel_performance.h"
#include "run/case_timing.h"

namespace attnfuzz {

// known: the case failed as a --known-failures entry says it does (run/known_failures.h); it
// neither passes nor fails the run.
enum class CaseStatus { pass, fail, skip, known };
inline constexpr CaseStatus kCaseStatuses[] = {CaseStatus::pass, CaseStatus::fail, CaseStatus::skip,
                                               CaseStatus::known};
inline std::string_view case_status_name(CaseStatus status) {
  constexpr std::string_view names[] = {"pass", "fail", "skip", "known"};
  return names[static_cast<int>(status)];
}

// Why a case was skipped: it could not run here (no usable GPU, kernel not in this build, out of
// memory), its kernel declares the shape unsupported, or the kernel ran but the tolerance cannot
// tell right from wrong on this case's data (oracle/tolerance.h, kMaxProbabilitySpread).
// --fail-on-skip fails only the first kind.
enum class SkipCause { unavailable, unsupported, inconclusive };
inline std::string_view skip_cause_name(SkipCause cause) {
  constexpr std::string_view names[] = {"unavailable", "unsupported", "inconclusive"};
  return names[static_cast<int>(cause)];
}

// The --known-failures entry a known case matched: why it fails and where that is tracked.
struct KnownFailureNote {
  std::string reason;
  std::string issue;  // a link to the upstream issue
  std::string entry;  // the file and the entry's JSON pointer: "known.json#/known_failures/2"
  bool operator==(const KnownFailureNote&) const = default;
};

struct CaseResult {
  AttentionCase attention_case;
  std::string kernel_name;     // the kernel that ran (or would have run)
  std::string plant = "none";  // planted bug switched on, if any
  CaseStatus status = CaseStatus::skip;
  std::string reason;  // why it failed (known too) or was skipped; empty on pass
  SkipCause skip_cause = SkipCause::unavailable;  // meaningful when skipped
  std::string output_tail;  // a crashed or hung worker's last output; else empty
  std::string oracle;       // which reference was used, e.g. "cpu_float64"
  Comparison comparison;    // meaningful when the kernel ran
  bool ran = false;
  CaseTiming timing;
  std::string timestamp;  // UTC, ISO 8601, when the case finished
  // --bench: how fast the kernel ran the case, once it passed; absent otherwise.
  std::optional<KernelPerformance> performance;
  std::optional<KnownFailureNote> known_failure;  // present exactly when status is known
  // The backward pass's judgement, for a case that asks for it ("backward": true) once its
  // forward has passed; absent otherwise.
  std::optional<GradientComparison> backward;
};

}  // namespace attnfuzz
