// SPDX-License-Identifier: BSD-3-Clause
// The supervisor side of contained runs: cases run in worker processes (run/case_worker.h), so a
// kernel that crashes, hangs or exhausts memory costs its own case and nothing else. A fresh
// worker takes the remaining cases; with several devices, one worker per device shares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnfuzz {

struct WorkerPoolSettings {
  std::vector<std::string> command;  // a worker's argv; command[0] is the executable
  // One worker per entry, started with CUDA_VISIBLE_DEVICES set to it; empty: one worker with the
  // environment as it is.
  std::vector<std::string> devices;
  double case_timeout_seconds = 0.0;    // a case without an answer by then is a hang; 0: no limit
  std::int64_t memory_limit_bytes = 0;  // the workers' cap (run/worker_memory.h)
};

// How a case ended when its worker did not answer for it. Out of memory is the case's size, a
// skip; leaked is memory the kernel kept from case to case until this one crossed the limit, a
// failure (worker_pool.cpp, leak_of).
enum class WorkerLossKind { crashed, hung, out_of_memory, leaked };

struct WorkerLoss {
  WorkerLossKind kind = WorkerLossKind::crashed;
  std::string description;  // one line: the signal or exit status, or the watchdog's verdict
  std::string output_tail;  // the worker's last output (stdout and stderr) during the case
  double seconds = 0.0;     // from handing the case out to the loss: a hung case's real duration
};

// Each case ends in exactly one call of `on_record` (the worker's answer, a case_to_json record,
// or another object with the same "status": pass, fail or skip) or `on_loss`; either returns false
// to stop the run: no further case starts, and workers still busy are killed. Cases are handed out
// in the order of `indices`, each as the request `request_of(index)` builds (a JSON object; the
// pool adds "index"); with several workers they may finish out of order. A case is blamed for a
// worker's death only once the worker said it started it; one whose worker died before that is
// handed out again (up to kMaxCaseStarts times). Throws HarnessError when a worker cannot start at
// all.
using WorkerRequestBuilder = std::function<nlohmann::json(std::size_t index)>;
using WorkerRecordHandler = std::function<bool(std::size_t index, const nlohmann::json& record)>;
using WorkerLossHandler = std::function<bool(std::size_t index, const WorkerLoss& loss)>;
void run_on_workers(const WorkerPoolSettings& settings, const std::vector<std::size_t>& indices,
                    const WorkerRequestBuilder& request_of, const WorkerRecordHandler& on_record,
                    const WorkerLossHandler& on_loss);

// How often a case is handed out to workers that die before starting it.
inline constexpr int kMaxCaseStarts = 3;

// Workers that stay up between runs, for callers that have one case at a time to run contained
// (the property search): each run() is run_on_workers' on the pool's workers, which then wait for
// the next; a worker that died or hung is replaced at the next run. The destructor lets idle
// workers exit and kills the rest.
class WorkerPool {
 public:
  explicit WorkerPool(WorkerPoolSettings settings);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void run(const std::vector<std::size_t>& indices, const WorkerRequestBuilder& request_of,
           const WorkerRecordHandler& on_record, const WorkerLossHandler& on_loss);
  // The --case-timeout of the cases of later runs.
  void set_case_timeout(double seconds);

  class Supervisor;

 private:
  std::unique_ptr<Supervisor> supervisor_;
};

}  // namespace attnfuzz
