// SPDX-License-Identifier: BSD-3-Clause
// A whole run: where it ran, every case's result, and the summary that decides the exit code.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "run/bench_gate.h"
#include "run/case_result.h"

namespace attnfuzz {

struct RunEnvironment {
  std::string harness_version;
  std::string git_commit;  // of the build
  std::string compiler;
  std::string build_type;
  std::string host_cpu;  // model name
  int threads = 1;
  std::string blas;     // e.g. "OpenBLAS 0.3.21 ..."
  std::string backend;  // requested: auto, cpu, cuda
  std::string cuda;     // "built with CUDA 13.0; no usable device: ..." or "built without CUDA"
  // The locked numerics, one phrase each (accumulation, P precision, TF32, seeds).
  std::vector<std::pair<std::string, std::string>> numerics;
};

struct RunSummary {
  std::string matrix_name;
  std::string matrix_source;
  int total = 0;
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  int known = 0;  // failed as a --known-failures entry says: counted neither way
  int exit_code = 0;
  double wall_seconds = 0.0;
  std::string started_at;  // UTC, ISO 8601
};

struct RunReport {
  RunEnvironment environment;
  RunSummary summary;
  std::vector<CaseResult> results;
  std::optional<BenchReport> bench;  // a --bench run's measurement settings, machine and baseline
};

// Tallies results into summary counts and the exit code (0 pass, 1 fail, 2 nothing passed). Known
// failures count neither way: a run of only those and skips passed nothing.
void summarize(RunReport& report);

// ", 2 known" after the other counts when cases failed as --known-failures lists them; "" when
// none did, so that runs without the flag read as they always have.
std::string known_count_phrase(const RunSummary& summary);

// The reasons cases were skipped and how many each, most common first (ties keep the order in
// which they first appeared).
std::vector<std::pair<std::string, int>> skip_reasons_by_count(const RunReport& report);

}  // namespace attnfuzz
