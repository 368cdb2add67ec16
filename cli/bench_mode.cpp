// SPDX-License-Identifier: BSD-3-Clause
#include "cli/bench_mode.h"

#include <iostream>
#include <string>

#include "core/harness_error.h"
#include "core/number_text.h"
#include "core/text.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "perf/machine_state.h"
#include "report/report_writers.h"
#include "run/bench_rounds.h"

namespace attnfuzz {
namespace {

// The device and driver a --bench run's timings belong to: the GPU and its driver when the run's
// kernel runs on one, else the CPU model with the thread count (which changes a CPU kernel's
// speed).
BenchIdentity bench_identity(const CaseMatrix& matrix, const CaseRunner& runner,
                             const std::vector<AttentionCase>& cases,
                             const RunEnvironment& environment) {
  BenchIdentity identity;
  identity.matrix_name = matrix.name;
  const AttentionKernel* kernel =
      find_kernel(runner.kernel_for(cases.empty() ? AttentionCase{} : cases.front()));
  if (kernel != nullptr && kernel->site() == ExecutionSite::cuda_device) {
    identity.device = cuda_device_status().usable ? cuda_device_status().device_name
                                                  : cuda_device_status().description;
    const GpuState gpu = read_gpu_state(cuda_device_status().pci_bus_id);
    identity.driver =
        gpu.available ? gpu.driver_version : "unknown (" + gpu.unavailable_reason + ")";
  } else {
    identity.device =
        environment.host_cpu + ", " + std::to_string(environment.threads) + " threads";
    identity.driver = "none";
  }
  return identity;
}

}  // namespace

BenchStart start_bench(const HarnessOptions& options, const RunPlan& plan, const CaseRunner& runner,
                       const std::vector<AttentionCase>& cases, const RunEnvironment& environment) {
  BenchStart start;
  BenchReport& bench = start.report;
  bench.settings = runner.settings().bench;
  bench.max_slowdown = options.max_slowdown;
  bench.identity = bench_identity(plan.matrix, runner, cases, environment);
  bench.machine_before = machine_state_now();
  if (std::optional<std::string> warning = cpu_load_warning(read_cpu_state())) {
    bench.warnings.push_back(*warning);
  }
  const bool default_matrix = options.configs.empty() && options.replay.empty();
  if (default_matrix && bench.identity.driver == "none") {
    bench.warnings.push_back(
        "the default corpus/matrix/bench.json is sized for a GPU (up to 550 GFLOP a case); on the "
        "CPU, --configs corpus/matrix/bench_small.json times in seconds");
  }
  bench.fail_on_suspect = options.fail_on_suspect;
  if (const std::optional<ReferenceKernel>& reference = runner.settings().reference) {
    const CaseRunner reference_runner = runner.reference_runner();
    bench.reference = reference_runner.kernel_for(cases.empty() ? AttentionCase{} : cases.front()) +
                      " (plant " + std::string(planted_bug_name(reference->plant)) + ")";
  }
  if (!options.resume.empty()) {
    throw HarnessError(
        "--resume does not go with --bench: an interrupted run's timings were taken "
        "at another time, under another load; run the benchmark whole");
  }
  if (options.baseline.empty()) return start;
  start.baseline = load_baseline(options.baseline);
  bench.baseline_path = options.baseline;
  bench.identity_mismatches = identity_mismatches(start.baseline->identity, bench.identity);
  if (!bench.identity_mismatches.empty()) {
    if (!options.compare_anyway) {
      throw HarnessError("--baseline " + options.baseline +
                         " was timed elsewhere, its timings do not compare with this run's: " +
                         join_names(bench.identity_mismatches, "; ") +
                         " (--compare-anyway compares them all the same)");
    }
    bench.warnings.push_back("compared anyway with a baseline timed elsewhere: " +
                             join_names(bench.identity_mismatches, "; "));
  }
  return start;
}

void print_bench_header(std::ostream& out, const BenchReport& bench) {
  out << "bench: each passing case timed in " << bench.settings.rounds << " rounds of up to "
      << significant_digits(bench.settings.seconds_per_case / bench.settings.rounds, 3)
      << " s, each until its median's 95% interval is within "
      << significant_digits(bench.settings.target_ci_width * 100, 3) << "%; device "
      << bench.identity.device << ", driver " << bench.identity.driver << "\n";
  if (!bench.baseline_path.empty()) {
    out << "bench: against the baseline " << bench.baseline_path << ", a case slower by more than "
        << significant_digits(bench.max_slowdown * 100, 3) << "% at 95% confidence fails"
        << (bench.fail_on_suspect ? ", even when timed on a busy machine"
                                  : " (timed on a busy machine: reported as suspect)")
        << "\n";
  }
  if (!bench.reference.empty()) {
    out << "bench: side by side with " << bench.reference
        << " (both must pass a case first; each round 8 pairs of blocks, the two kernels sharing "
           "the round's time), "
        << "a case slower than it by more than " << significant_digits(bench.max_slowdown * 100, 3)
        << "% at 95% confidence fails\n";
  }
  for (const std::string& warning : bench.warnings) out << "bench: warning: " << warning << "\n";
}

void finish_bench(const HarnessOptions& options, const CaseRunner& runner,
                  const CaseRunSettings& case_run, const BenchGate& gate, RunReport& report) {
  BenchReport& bench = *report.bench;
  run_later_rounds(runner, case_run, bench.settings.rounds, report.results, [&](int round) {
    std::cout << "bench: timing round " << round << " of " << bench.settings.rounds << "\n"
              << std::flush;
  });
  for (CaseResult& result : report.results) gate.judge(result);
  bench.machine_after = machine_state_now();
  gate.tally(report.results, bench);
  write_performance_table(std::cout, report, options.quiet);
}

}  // namespace attnfuzz
