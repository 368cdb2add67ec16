// SPDX-License-Identifier: BSD-3-Clause
// The later timing rounds of fuzz_attention --bench (perf/kernel_performance.h, BenchSettings):
// after every case has run, passed and been timed once, each timed case is timed again, round
// after round, contained in the workers as its first run was. Spreading a case's rounds over the
// whole run puts the machine's drift between them, where the gate's interval sees it.
#pragma once

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/case_result.h"
#include "run/case_runner.h"
#include "run/case_worker.h"
#include "run/run_cases.h"

namespace attnfuzz {

// The worker's answer to a timing request for round `round`, beside the reference kernel when
// `side_by_side`: {"performance": ...} or {"error": "..."}.
nlohmann::json answer_timing_request(const CaseRunner& runner, const AttentionCase& attention_case,
                                     int round, bool side_by_side);

// The request a worker answers with a timing round (answer_timing_request): it carries
// "bench_round" (the round) and "side_by_side". The kind answers with `runner`, which must outlive
// it.
WorkerRequestKind timing_request_kind(const CaseRunner& runner);

// Times every result that carries a performance record `rounds - 1` more times, adding each round
// to it (beside the reference kernel, as its first round was, when that was). A case whose kernel
// fails, crashes or hangs in a later round fails, with the round named. `on_round` is told each
// round as it begins (for progress).
void run_later_rounds(const CaseRunner& runner, const CaseRunSettings& settings, int rounds,
                      std::vector<CaseResult>& results, const std::function<void(int)>& on_round);

}  // namespace attnfuzz
