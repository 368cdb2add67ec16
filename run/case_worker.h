// The worker side of contained runs: a child process of fuzz_attention that runs the cases its
// supervisor (run/worker_pool.h) names, one at a time, and answers each with its result.
//
// Protocol, one JSON object per line:
//   supervisor -> worker, on stdin:     {"index": 12}            (EOF: no more cases, exit 0)
//   worker -> supervisor, on fd 3:      {"ready": true}          once, after start-up
//                                       {"index": 12, "result": <case_to_json>}
// The worker's stdout and stderr go to the supervisor, which keeps their tail for crash reports.
// A worker that lost its CUDA context (a sticky error) answers, then exits: a fresh worker, with a
// fresh context, takes the next case.
#pragma once

#include <vector>

#include "case/attention_case.h"
#include "run/case_runner.h"

namespace attnfuzz {

// The descriptor a worker writes its answers to (stdin carries the requests).
constexpr int kWorkerResultFd = 3;

// Serves requests until stdin closes; returns the worker's exit code.
int serve_cases(const CaseRunner& runner, const std::vector<AttentionCase>& cases);

}  // namespace attnfuzz
