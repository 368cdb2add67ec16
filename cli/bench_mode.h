// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention --bench: the performance gate around a matrix run. Before the first case, what
// the report says of the measurement and the baseline, checked to be comparable; after the last,
// the later timing rounds, the gate's verdicts and the performance table.
#pragma once

#include <iosfwd>
#include <optional>
#include <vector>

#include "cli/case_selection.h"
#include "options/harness_options.h"
#include "perf/baseline.h"
#include "report/run_report.h"
#include "run/bench_gate.h"
#include "run/case_runner.h"
#include "run/run_cases.h"

namespace attnfuzz {

// What the run's report says of the measurement before it starts, and the baseline.
struct BenchStart {
  BenchReport report;
  std::optional<Baseline> baseline;
};

// Reads --baseline and checks that it was timed on this device, driver and matrix: else
// HarnessError (exit 3 before any case runs) unless --compare-anyway, which warns instead.
BenchStart start_bench(const HarnessOptions& options, const RunPlan& plan, const CaseRunner& runner,
                       const std::vector<AttentionCase>& cases, const RunEnvironment& environment);

// The lines under the run header of a --bench run: how cases are timed, against what, and any
// warning about the machine.
void print_bench_header(std::ostream& out, const BenchReport& bench);

// Once every case has run: the later timing rounds, the gate's verdicts, the machine's state
// after, and the performance table.
void finish_bench(const HarnessOptions& options, const CaseRunner& runner,
                  const CaseRunSettings& case_run, const BenchGate& gate, RunReport& report);

}  // namespace attnfuzz
