// SPDX-License-Identifier: BSD-3-Clause
// The worker side of contained runs: a child process of fuzz_attention that runs the cases its
// supervisor (run/worker_pool.h) sends, one at a time, and answers each with its result.
//
// Protocol, one JSON object per line, on two pipes whose descriptors the supervisor passes in the
// environment variable ATTNFUZZ_WORKER_FDS ("<requests>,<answers>"): numbers above the standard
// ones, close-on-exec once the worker has them, so that a plugin that closes stdin, writes to
// fd 3 or starts a program cannot reach them. The worker's stdin is /dev/null.
//   supervisor -> worker:   {"index": 12, "id": "edges/12", "case": <case_keys_to_json>, ...}
//                           (end of file: no more cases, exit 0)
//   worker -> supervisor:   {"ready": true}          once, after start-up
//                           {"started": 12}          the case is about to run
//                           {"index": 12, "result": <the handler's answer>, "leaving": false}
// The worker's stdout and stderr go to the supervisor, which keeps their tail for crash reports.
// A worker that lost its CUDA context (a sticky error) answers, then exits: a fresh worker, with a
// fresh context, takes the next case.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "run/case_runner.h"

namespace attnfuzz {

// The environment variable that carries the protocol's descriptors to a worker.
inline constexpr const char* kWorkerFdsVariable = "ATTNFUZZ_WORKER_FDS";

// What a worker does with one request: the case it carries (rebuilt from "case" and "id") and the
// whole request (which may ask for more than a run, e.g. a property check); returns the answer's
// "result".
using WorkerHandler = std::function<nlohmann::json(const AttentionCase& attention_case,
                                                   const nlohmann::json& request)>;

// Serves requests with `handle` until the supervisor closes the request pipe; returns the worker's
// exit code.
int serve_requests(const WorkerHandler& handle);

// The handler of matrix runs: runs the case, answers its case_to_json record.
nlohmann::json run_case_request(const CaseRunner& runner, const AttentionCase& attention_case);

// A kind of request a worker answers besides running a case, told apart by a key its requests
// carry. run/ serves its own (a --bench timing round, run/bench_rounds.h); the layers above add
// theirs (a property check, fuzz/contained_property_check.h), so that run/ knows none of them.
struct WorkerRequestKind {
  std::string key;
  WorkerHandler answer;
};

// What `fuzz_attention --worker` does: serves requests until the supervisor closes the pipe. A
// request carrying the key of a timing round or of one of `other_kinds` goes to that kind; any
// other runs its case (run_case_request). Returns the worker's exit code.
int serve_worker(const CaseRunner& runner, const std::vector<WorkerRequestKind>& other_kinds);

}  // namespace attnfuzz
