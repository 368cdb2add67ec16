// SPDX-License-Identifier: BSD-3-Clause
// Runs the cases of a matrix and keeps every result: cases already in a --resume stream are taken
// from it, the rest run contained in worker processes (run/worker_pool.h) or, on request, in this
// process; each new result goes to the --stream file the moment it exists, before it is shown.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "case/attention_case.h"
#include "run/case_result.h"
#include "run/case_runner.h"
#include "run/known_failures.h"
#include "run/worker_pool.h"

namespace attnfuzz {

struct CaseRunSettings {
  bool in_process = false;       // no workers: a crash or hang takes the run down
  WorkerPoolSettings workers;    // how workers start and are watched
  std::filesystem::path stream;  // JSON Lines of results, appended; empty: none
  std::filesystem::path resume;  // a stream of an earlier run of these cases; empty: none
  bool fail_fast = false;        // stop after the first failing case
  KnownFailures known_failures;  // --known-failures: judges each result after it is streamed
};

struct CaseRunOutcome {
  std::vector<CaseResult> results;  // in the order of the cases; cases never run are absent
  int resumed = 0;                  // how many came from the resume stream
};

// `on_new_result` sees each case that ran now (not resumed ones), as it finishes. Throws
// HarnessError when the resume stream holds a case these cases lack, or one run differently
// (another shape, kernel or plant).
CaseRunOutcome run_cases(const CaseRunner& runner, const std::vector<AttentionCase>& cases,
                         const CaseRunSettings& settings,
                         const std::function<void(const CaseResult&)>& on_new_result);

// The result recorded for a case whose worker died or hung on it: a crash or hang fails the case,
// running out of memory skips it; the reason says which, and the worker's last output is kept.
CaseResult result_of_lost_worker(const CaseRunner& runner, const AttentionCase& attention_case,
                                 const WorkerLoss& loss);

}  // namespace attnfuzz
