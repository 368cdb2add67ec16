// SPDX-License-Identifier: BSD-3-Clause
// How a run's cases run, from the flags: in worker processes (copies of this program started with
// --worker, one per --devices GPU) or in this process, with their limits (--case-timeout,
// --memory-limit), streamed (--stream) and resumed (--resume).
#pragma once

#include <string>

#include "options/harness_options.h"
#include "run/run_cases.h"

namespace attnfuzz {

// The largest --case-timeout and --progress-every: about 11.6 days.
inline constexpr double kMaxCaseTimeoutSeconds = 1e6;

// This program's own path, for starting copies of it (workers, the plugin probe).
std::string self_executable(const char* argv0);

// The settings of this run's cases; workers rerun this program with the same arguments and
// --worker. Throws HarnessError on a limit out of range or streams that disagree.
CaseRunSettings case_run_settings(const HarnessOptions& options, int argc, char** argv);

}  // namespace attnfuzz
