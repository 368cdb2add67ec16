// SPDX-License-Identifier: BSD-3-Clause
// A matrix run as it goes: each result's table row as it finishes (with --quiet only failures and
// skips; a replayed case also as a line of JSON) and progress on stderr, kept up to date on a
// terminal and written now and then off one (a CI log, where a two-hour GPU run would otherwise
// say nothing until its end).
#pragma once

#include <vector>

#include "options/harness_options.h"
#include "run/case_runner.h"
#include "run/run_cases.h"

namespace attnfuzz {

// Runs the cases (run/run_cases.h), showing each result and the progress as described above.
CaseRunOutcome run_showing_progress(const HarnessOptions& options, const CaseRunner& runner,
                                    const std::vector<AttentionCase>& cases,
                                    const CaseRunSettings& case_run);

}  // namespace attnfuzz
