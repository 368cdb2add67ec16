// The supervisor side of contained runs: cases run in worker processes (run/case_worker.h), so a
// kernel that crashes, hangs or exhausts memory costs its own case and nothing else. A fresh
// worker takes the remaining cases; with several devices, one worker per device shares them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// How a case ended when its worker did not answer for it.
enum class WorkerLossKind { crashed, hung, out_of_memory };

struct WorkerLoss {
  WorkerLossKind kind = WorkerLossKind::crashed;
  std::string description;  // one line: the signal or exit status, or the watchdog's verdict
  std::string output_tail;  // the worker's last output (stdout and stderr) during the case
};

// Each case ends in exactly one call of `on_record` (the worker's answer, a case_to_json record)
// or `on_loss`; either returns false to stop the run: no further case starts, and workers still
// busy are killed. Cases are handed out in the order of `indices`; with several workers they may
// finish out of order. Throws HarnessError when a worker cannot start at all.
using WorkerRecordHandler = std::function<bool(std::size_t index, const nlohmann::json& record)>;
using WorkerLossHandler = std::function<bool(std::size_t index, const WorkerLoss& loss)>;
void run_on_workers(const WorkerPoolSettings& settings, const std::vector<std::size_t>& indices,
                    const WorkerRecordHandler& on_record, const WorkerLossHandler& on_loss);

}  // namespace attnfuzz
