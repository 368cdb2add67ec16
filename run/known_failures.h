// SPDX-License-Identifier: BSD-3-Clause
// --known-failures FILE: failures a user cannot fix (an upstream library's bug), each listed with
// its reason and the issue that tracks it. A case an entry matches that fails as the entry says
// becomes `known`: it neither passes nor fails the run. One that passes fails the run, saying
// which entry to remove, so the list cannot outlive the bugs it names.
//
//   {"known_failures": [
//     {"case": "pr/1*",                  optional: the case id, a shell pattern (* ? [..])
//      "kernel": "*-sdpa_flash",         optional: the kernel's name, a shell pattern
//      "where": {"dtype": "bf16"},       optional: case keys and values (case/case_pattern.h)
//      "failure": "is NaN",              optional: text the failure's reason contains
//      "reason": "NaN for rows ...",     why it fails
//      "issue": "https://..."}]}         where it is tracked
//
// An entry matches a case when all of its optional parts do; one with none matches every case. An
// entry names the failing cases themselves (a listed case that passes fails the run); `failure`
// only tells their known failure from another one. A --stream holds verdicts before this judgement,
// so a --resume judges old and new cases by the list it is given.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "case/case_pattern.h"
#include "run/case_result.h"

namespace attnfuzz {

struct KnownFailure {
  std::string case_id;  // a shell pattern; empty: any case
  std::string kernel;   // a shell pattern; empty: any kernel
  CasePattern where;
  std::string failure;  // the failing reason holds this; empty: any failure
  KnownFailureNote note;
};

class KnownFailures {
 public:
  KnownFailures() = default;  // lists nothing

  // Throws HarnessError naming `source` and the field ("known.json: /known_failures/2/issue:
  // missing").
  static KnownFailures parse(std::string_view text, const std::string& source);
  static KnownFailures load(const std::filesystem::path& path);

  // A failing case an entry lists becomes known (the first such entry's note); a passing case an
  // entry lists fails; a failure of another kind than the listed one stays a failure, and says so.
  // Skipped cases stay skipped.
  void judge(CaseResult& result) const;

 private:
  std::vector<KnownFailure> entries_;
};

}  // namespace attnfuzz
