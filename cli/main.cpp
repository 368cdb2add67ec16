// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention: runs a matrix of attention cases on a kernel under test and judges each against
// the float64 oracle. Exit codes: 0 pass, 1 fail, 2 nothing could run, 3 harness error.
//
// This file picks the mode and runs the matrix; each other mode, and each stage of the matrix run,
// has its own file in cli/: case_selection (which cases, --list-cases, --save-cases, --describe),
// kernel_setup (--kernel-lib's probe, --list-kernels), case_run_options (workers and their
// limits), run_progress (rows and progress as cases finish), bench_mode (--bench), report_files
// (--json, --junit, --markdown, --html) and property_mode (--properties).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/bench_mode.h"
#include "cli/case_run_options.h"
#include "cli/case_selection.h"
#include "cli/kernel_setup.h"
#include "cli/property_mode.h"
#include "cli/report_files.h"
#include "cli/run_progress.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "core/text.h"
#include "fuzz/contained_property_check.h"
#include "kernels/planted_bug.h"
#include "options/harness_options.h"
#include "options/run_settings_options.h"
#include "report/build_info.h"
#include "report/report_writers.h"
#include "run/case_worker.h"

namespace attnfuzz {
namespace {

// The report of a run about to start: where it runs, which matrix, when.
RunReport start_report(const CaseMatrix& matrix, const RunSettings& settings) {
  RunReport report;
  report.environment = describe_environment(backend_name(settings.backend));
  const DeclaredNumerics& numerics = settings.numerics;
  const struct {
    bool declared;
    const char* key;
    std::string value;
  } declarations[] = {
      {numerics.accumulation_declared(), "declared_accumulation",
       accumulation_name(numerics) +
           " for P V and the row sum (--accumulation): the bias test is off"},
      {numerics.probabilities_declared(), "declared_probabilities",
       probabilities_name(numerics) +
           " for P before P V (--probabilities): the bias test is off where P is coarser than the "
           "output"},
      {numerics.dequantization_declared(), "declared_dequantization",
       dequantization_name(numerics) +
           " for fp8 inputs, each times its factor, before the products (--dequantize-to): the "
           "bias test is off for fp8 cases"}};
  for (const auto& declaration : declarations) {
    if (!declaration.declared) continue;
    report.environment.numerics.emplace_back(
        declaration.key, declaration.value +
                             "; the bounds and the plain reference follow it (docs/tolerance.md, "
                             "Declared numerics)");
  }
  report.summary.matrix_name = matrix.name;
  report.summary.matrix_source = matrix.source;
  report.summary.started_at = utc_timestamp();
  return report;
}

// The line that opens a matrix run's output: how many cases, from where, run how.
void print_run_header(std::ostream& out, const HarnessOptions& options, std::size_t case_count,
                      const RunReport& report, const CaseRunSettings& case_run) {
  out << "fuzz_attention: " << case_count << " cases from " << report.summary.matrix_source
      << ", backend " << options.backend << " (" << report.environment.cuda << "), "
      << report.environment.threads << " threads, plant " << options.plant << ", "
      << (case_run.in_process
              ? std::string("in this process")
              : std::to_string(std::max<std::size_t>(case_run.workers.devices.size(), 1)) +
                    " worker process(es)")
      << "\n";
}

// The cases could not run here (no GPU, kernel not built, out of memory): with --fail-on-skip
// they fail the run. A case its kernel declares unsupported stays an ordinary skip.
void apply_fail_on_skip(RunReport& report, std::ostream& out) {
  const auto unavailable =
      std::count_if(report.results.begin(), report.results.end(), [](const CaseResult& result) {
        return result.status == CaseStatus::skip && result.skip_cause == SkipCause::unavailable;
      });
  if (unavailable == 0) return;
  out << "--fail-on-skip: " << unavailable << " case(s) could not run here\n";
  report.summary.exit_code = kExitFail;
}

// Runs the cases into `report` (begun by start_report) and summarizes it (exit code included).
void run_and_report(const HarnessOptions& options, const CaseRunner& runner,
                    const std::vector<AttentionCase>& cases, const CaseRunSettings& case_run,
                    const BenchGate* gate, RunReport& report) {
  const auto started = std::chrono::steady_clock::now();
  print_run_header(std::cout, options, cases.size(), report, case_run);
  if (report.bench) print_bench_header(std::cout, *report.bench);
  report.results = run_showing_progress(options, runner, cases, case_run).results;
  if (gate != nullptr) finish_bench(options, runner, case_run, *gate, report);
  report.summary.wall_seconds = seconds_since(started);
  summarize(report);
  if (options.fail_on_skip) apply_fail_on_skip(report, std::cout);
}

// Under "replay a failing case:", the command that replays each failing case.
void print_replay_commands(std::ostream& out, const RunReport& report, const ReplayOf& replay_of) {
  bool first_failure = true;
  for (const CaseResult& result : report.results) {
    if (result.status != CaseStatus::fail) continue;
    if (first_failure) out << "\nreplay a failing case:\n";
    first_failure = false;
    out << "  " << printable_text(replay_of(result), KeptControls::tab_and_newline) << "\n";
  }
}

// The matrix run (or --replay of case files): reads the plan, then saves its cases (--save-cases)
// or runs them and prints and writes the reports.
int run_matrix(const HarnessOptions& options, const RunSettings& settings, int argc, char** argv) {
  const RunPlan plan = plan_of(options);
  const std::vector<AttentionCase> cases = cases_to_run(options, plan);
  if (!options.save_cases.empty()) return save_cases(cases, options.save_cases);
  const CaseRunner runner(settings);
  for (const AttentionCase& attention_case : cases) runner.validate(attention_case);
  // A bug of the backward pass changes nothing a forward-only case checks: every case would pass.
  if (settings.plant != PlantedBug::none &&
      planted_bug_info(settings.plant).detector == PlantDetector::backward &&
      std::none_of(cases.begin(), cases.end(), [](const AttentionCase& c) { return c.backward; })) {
    throw HarnessError("--plant " + options.plant +
                       ": a bug of the backward pass, and no case of this run judges the backward "
                       "pass (\"backward\": true; corpus/matrix/backward.json has such cases)");
  }
  const CaseRunSettings case_run = case_run_settings(options, argc, argv);
  check_outputs(options);

  RunReport report = start_report(plan.matrix, settings);
  std::optional<BenchGate> gate;
  if (options.bench) {
    BenchStart bench = start_bench(options, plan, runner, cases, report.environment);
    report.bench = std::move(bench.report);
    gate.emplace(std::move(bench.baseline), options.max_slowdown, options.fail_on_suspect);
  }
  run_and_report(options, runner, cases, case_run, gate ? &*gate : nullptr, report);
  const ReplayOf replay_of = [&](const CaseResult& result) {
    return replay_command(options, settings, plan, result);
  };
  print_replay_commands(std::cout, report, replay_of);
  std::cout << "\n";
  write_table_summary(std::cout, report);
  return exit_code_of(report, write_report_files(options, report, replay_of));
}

int run(int argc, char** argv) {
  const HarnessOptions options = parse_harness_options(argc, argv);
  if (options.version) {
    std::cout << version_text();
    return kExitPass;
  }
  const PluginKernels plugins = set_up_kernels(options, argv[0]);
  if (options.probe_plugin) {
    std::cout << (plugins.kernel.empty() ? plugins.reference : plugins.kernel) << "\n";
    return kExitPass;
  }
  if (options.list_kernels) {
    list_kernels(std::cout);
    return kExitPass;
  }
  const RunSettings settings = run_settings_of(options, plugins.kernel, plugins.reference);
  // A worker runs the cases its supervisor sends, each whole (it reads no matrix of its own): a
  // matrix run's cases and timing rounds, or the property search's checks.
  if (options.worker) {
    const CaseRunner runner(settings);
    return serve_worker(runner, {ContainedPropertyCheck::request_kind(settings),
                                 ContainedPropertyCheck::reach_request_kind(settings)});
  }
  if (!options.describe.empty()) return describe(options.describe);
  if (options.list_cases) return list_cases(options);
  if (options.list_properties) {
    list_properties(std::cout);
    return kExitPass;
  }
  if (options.properties) return run_property_mode(options, settings, argc, argv);
  return run_matrix(options, settings, argc, argv);
}

}  // namespace
}  // namespace attnfuzz

int main(int argc, char** argv) {
  try {
    return attnfuzz::run(argc, argv);
  } catch (const attnfuzz::HarnessError& error) {
    std::cerr << "fuzz_attention: error: " << error.what() << "\n";
  } catch (const std::filesystem::filesystem_error& error) {
    // The file system refused something (a folder where a file was expected, no permission): the
    // message names the paths; it is the environment's problem, not a bug of the harness.
    std::cerr << "fuzz_attention: error: " << error.what() << "\n";
  } catch (const std::exception& error) {
    std::cerr << "fuzz_attention: internal error: " << error.what() << "\n";
  }
  return attnfuzz::kExitHarnessError;
}
