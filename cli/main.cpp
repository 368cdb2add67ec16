// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention: runs a matrix of attention cases on a kernel under test and judges each against
// the float64 oracle. Exit codes: 0 pass, 1 fail, 2 nothing could run, 3 harness error.
#include <fnmatch.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "case/case_codec.h"
#include "case/work_cap.h"
#include "cli/harness_options.h"
#include "cli/run_settings_options.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "core/json_text.h"
#include "core/number_text.h"
#include "core/text.h"
#include "fuzz/contained_property_check.h"
#include "fuzz/properties.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "matrix/case_file.h"
#include "matrix/matrix_file.h"
#include "perf/baseline.h"
#include "perf/machine_state.h"
#include "report/build_info.h"
#include "report/report_writers.h"
#include "run/bench_gate.h"
#include "run/bench_rounds.h"
#include "run/case_runner.h"
#include "run/case_worker.h"
#include "run/child_process.h"
#include "run/replay_command.h"
#include "run/run_cases.h"
#include "run/shard.h"
#include "run/worker_memory.h"

namespace attnfuzz {
namespace {

constexpr std::string_view kDefaultMatrix = "pr.json";
constexpr std::string_view kDefaultBenchMatrix = "bench.json";
// The largest values the limits take: about 11.6 days, a year, and 1 PiB.
constexpr double kMaxCaseTimeoutSeconds = 1e6;
constexpr double kMaxBudgetSeconds = 3.2e7;
constexpr std::int64_t kMaxMemoryLimitMebibytes = std::int64_t{1} << 30;

// Marks a plant of speed in --list-kernels (scripts that count killed plants leave these out).
constexpr std::string_view kTimingPlantTag =
    " [a slowdown, not a wrong value: found by --bench with --baseline]";

void list_kernels(std::ostream& out) {
  for (const AttentionKernel* kernel : all_kernels()) {
    out << kernel->name() << " ("
        << (kernel->site() == ExecutionSite::host ? "host" : "CUDA device")
        << "): " << kernel->summary() << "\n  supports: " << kernel->capabilities()
        << "\n  plants:" << (kernel->plants().empty() ? " none\n" : "\n");
    for (PlantedBug plant : kernel->plants()) {
      const PlantedBugInfo& info = planted_bug_info(plant);
      out << "    " << info.name << ": " << info.effect << " (" << info.origin << ")"
          << (info.detector == PlantDetector::timing ? kTimingPlantTag : "") << "\n";
    }
  }
}

// Whether a case id matches a --case pattern: the id itself (a replayed file's name may hold * or
// [), or a shell wildcard pattern (fnmatch: * and ? match '/' too).
bool id_matches(const std::string& id, const std::string& pattern) {
  return id == pattern || fnmatch(pattern.c_str(), id.c_str(), 0) == 0;
}

// The matrix's cases that one of the patterns matches, in the matrix's order; every pattern must
// match a case.
std::vector<AttentionCase> select_cases(const CaseMatrix& matrix,
                                        const std::vector<std::string>& patterns) {
  if (patterns.empty()) return matrix.cases;
  std::vector<bool> matched(patterns.size(), false);
  std::vector<AttentionCase> selected;
  for (const AttentionCase& attention_case : matrix.cases) {
    bool selects = false;
    for (std::size_t index = 0; index < patterns.size(); ++index) {
      if (id_matches(attention_case.id, patterns[index])) selects = matched[index] = true;
    }
    if (selects) selected.push_back(attention_case);
  }
  for (std::size_t index = 0; index < patterns.size(); ++index) {
    if (!matched[index]) {
      throw HarnessError("--case: no case id matches '" + patterns[index] + "' in " +
                         matrix.source + " (--list-cases lists them)");
    }
  }
  return selected;
}

// The cases of a run and where each came from.
struct RunPlan {
  CaseMatrix matrix;
  std::map<std::string, std::filesystem::path> file_of_case;  // replay: the file holding each id
};

// --replay PATH: the cases of one file, or of every regular file in a folder (sorted by name).
RunPlan replay_plan(const std::filesystem::path& path) {
  RunPlan plan;
  plan.matrix.name = "replay";
  plan.matrix.source = path.string();
  std::vector<std::filesystem::path> files;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  for (const std::filesystem::path& file : files) {
    for (AttentionCase& attention_case : load_case_file(file)) {
      plan.file_of_case[attention_case.id] = file;
      plan.matrix.cases.push_back(std::move(attention_case));
    }
  }
  if (plan.matrix.cases.empty()) throw HarnessError("--replay: no case files in " + path.string());
  return plan;
}

RunPlan plan_of(const HarnessOptions& options) {
  if (!options.replay.empty()) {
    if (!options.configs.empty()) throw HarnessError("--replay and --configs exclude each other");
    return replay_plan(options.replay);
  }
  RunPlan plan;
  const std::string_view built_in = options.bench ? kDefaultBenchMatrix : kDefaultMatrix;
  plan.matrix = options.configs.empty() ? load_built_in_matrix(std::string(built_in))
                                        : load_matrix_file(options.configs);
  return plan;
}

// The cases of the plan this run runs: those --case names (default: all), then --shard's part.
std::vector<AttentionCase> cases_to_run(const HarnessOptions& options, const RunPlan& plan) {
  std::vector<AttentionCase> cases = select_cases(plan.matrix, options.case_ids);
  if (!options.shard.empty()) cases = cases_of_shard(cases, parse_shard(options.shard));
  return cases;
}

// The command that reruns one result's case alone, as this run ran it.
std::string replay_command(const HarnessOptions& options, const RunSettings& settings,
                           const RunPlan& plan, const CaseResult& result) {
  ReplayCommand command = replay_command_for(settings);
  const std::string& id = result.attention_case.id;
  if (const auto file = plan.file_of_case.find(id); file != plan.file_of_case.end()) {
    command.replay = file->second.string();
  } else {
    command.configs = options.configs;  // empty: the built-in matrix, fuzz_attention's default
  }
  command.case_id = id;
  command.kernel = result.kernel_name;
  command.plant = result.plant;
  command.bench = options.bench;
  command.baseline = options.baseline;
  return replay_command_line(command);
}

// One line of JSON per replayed case: the case and its verdict.
void print_replayed_case(std::ostream& out, const CaseResult& result) {
  nlohmann::json line = {{"id", result.attention_case.id},
                         {"case", case_keys_to_json(result.attention_case)},
                         {"kernel", result.kernel_name},
                         {"status", std::string(case_status_name(result.status))},
                         {"reason", result.reason}};
  if (result.ran) line["error_ratio"] = result.comparison.error_ratio;
  out << "    " << json_text(line) << "\n";
}

// --save-cases DIR: the selected cases as binary case files, named after their ids; a case over
// the binary form's work cap is saved fitted under it (case/work_cap.h), and says so.
int save_cases(const std::vector<AttentionCase>& cases, const std::filesystem::path& folder) {
  std::error_code error;
  if (std::filesystem::exists(folder, error) && !std::filesystem::is_directory(folder, error)) {
    throw HarnessError("--save-cases: " + folder.string() + " exists and is not a folder");
  }
  std::filesystem::create_directories(folder, error);
  if (error) {
    throw HarnessError("--save-cases: cannot create the folder " + folder.string() + ": " +
                       error.message());
  }
  int saved = 0;
  for (const AttentionCase& attention_case : cases) {
    const AttentionCase fitted = fit_to_work_cap(attention_case);
    std::string why;
    const std::optional<std::vector<std::uint8_t>> bytes = encode_case(fitted, &why);
    if (!bytes) {
      std::cout << "skipped " << attention_case.id << ": " << why << "\n";
      continue;
    }
    if (!(fitted == attention_case)) {
      std::cout << "fitted " << attention_case.id
                << " under the work cap: " << describe_case(fitted) << "\n";
    }
    std::string name = attention_case.id;
    std::replace(name.begin(), name.end(), '/', '_');
    write_file_atomically(folder / name, std::string(bytes->begin(), bytes->end()));
    ++saved;
  }
  std::cout << "saved " << saved << " of " << cases.size() << " cases to " << folder.string()
            << "\n";
  return kExitPass;
}

// --list-cases: what a run with these flags would run, a case a line: its id and its shape.
int list_cases(const HarnessOptions& options) {
  const RunPlan plan = plan_of(options);
  for (const AttentionCase& attention_case : cases_to_run(options, plan)) {
    std::cout << escape_control_characters(attention_case.id) << "  "
              << describe_case(attention_case) << "\n";
  }
  return kExitPass;
}

// --describe FILE: the file's cases as one matrix document (what --configs reads, what json.load
// parses), named after the file.
int describe(const std::filesystem::path& path) {
  std::cout << cases_to_matrix_text(load_case_file(path), path.filename().string());
  return kExitPass;
}

std::vector<Property> selected_properties(const HarnessOptions& options) {
  std::vector<Property> selected;
  for (const std::string& name : options.property_names) {
    const std::optional<Property> property = parse_property(name);
    if (!property) {
      throw HarnessError("--property: unknown property '" + name +
                         "' (fuzz_attention --list-properties lists them)");
    }
    selected.push_back(*property);
  }
  return selected;
}

// --properties --replay FILE: checks the selected properties (default: all) on saved cases.
int replay_properties(const HarnessOptions& options, const RunSettings& settings,
                      const PropertyChecker& checker) {
  std::vector<Property> selected = selected_properties(options);
  if (selected.empty()) {
    for (const PropertyInfo& info : kProperties) selected.push_back(info.property);
  }
  const RunPlan plan = replay_plan(options.replay);
  int failed = 0;
  for (const AttentionCase& attention_case : select_cases(plan.matrix, options.case_ids)) {
    for (Property property : selected) {
      const std::optional<std::string> failure =
          checker ? checker(property, attention_case)
                  : check_property(property, attention_case, settings);
      std::cout << (failure ? "FAIL " : "PASS ") << kProperties[static_cast<int>(property)].name
                << " " << attention_case.id << " " << case_keys_to_json(attention_case).dump()
                << "\n";
      if (failure) {
        std::cout << "    reason: " << printable_text(*failure, KeptControls::tab_and_newline)
                  << "\n";
      }
      failed += failure ? 1 : 0;
    }
  }
  std::cout << (selected.size() * plan.matrix.cases.size() - failed) << " passed, " << failed
            << " failed, 0 skipped\n";
  return failed ? kExitFail : kExitPass;
}

int search_properties(const HarnessOptions& options, const RunSettings& settings,
                      const PropertyChecker& checker) {
  if (!(options.budget > 0.0 && options.budget <= kMaxBudgetSeconds)) {
    throw HarnessError("--budget: must be a number of seconds > 0 and <= " +
                       std::to_string(static_cast<long long>(kMaxBudgetSeconds)) + ", got " +
                       std::to_string(options.budget));
  }
  PropertySettings search;
  search.run = settings;
  search.budget_seconds = options.budget;
  search.seed = options.seed;
  search.properties = selected_properties(options);
  search.regressions_dir = options.regressions;
  search.stop_at_first_failure = options.fail_fast;
  search.checker = checker;
  std::cout << "fuzz_attention --properties: " << options.budget << " s budget, seed "
            << options.seed << ", kernel " << CaseRunner(settings).kernel_for(AttentionCase{})
            << ", plant " << options.plant << "\n";
  const std::vector<PropertyOutcome> outcomes = run_properties(search, std::cout);
  int failed = 0;
  std::cout << "\n";
  for (const PropertyOutcome& outcome : outcomes) {
    const bool broken = outcome.minimal_case.has_value();
    failed += broken ? 1 : 0;
    std::printf("%s %-28s %6d cases %8.2f s%s\n", broken ? "FAIL" : "PASS",
                std::string(kProperties[static_cast<int>(outcome.property)].name).c_str(),
                outcome.tests, outcome.seconds, broken ? "  (minimal case saved)" : "");
  }
  std::cout << (outcomes.size() - failed) << " passed, " << failed << " failed, 0 skipped\n";
  return failed ? kExitFail : kExitPass;
}

void list_properties(std::ostream& out) {
  for (const PropertyInfo& info : kProperties) out << info.name << ": " << info.sentence << "\n";
}

// How the cases of this run are run (below): the property mode's workers start as a matrix run's.
CaseRunSettings case_run_settings(const HarnessOptions& options, int argc, char** argv);

// The report flags describe a matrix run; the property search prints its outcome and saves each
// minimal failing case instead. Given with --properties they would be ignored: refused.
void refuse_report_flags_with_properties(const HarnessOptions& options) {
  const std::pair<const char*, const std::string*> report_flags[] = {
      {"--json", &options.json}, {"--junit", &options.junit},   {"--markdown", &options.markdown},
      {"--html", &options.html}, {"--stream", &options.stream}, {"--resume", &options.resume},
  };
  for (const auto& [flag, value] : report_flags) {
    if (!value->empty()) {
      throw HarnessError(std::string(flag) +
                         " reports a matrix run; --properties writes no report (it prints each "
                         "property's outcome and saves minimal failing cases in --regressions)");
    }
  }
}

// --properties: the search, or with --replay the check of saved cases. Each check runs contained
// in a worker, as the matrix runner's cases do, unless --in-process asks otherwise.
int run_property_mode(const HarnessOptions& options, const RunSettings& settings, int argc,
                      char** argv) {
  refuse_report_flags_with_properties(options);
  CaseRunner(settings).validate(AttentionCase{});  // the kernel exists and carries the plant
  std::optional<ContainedPropertyCheck> contained;
  PropertyChecker checker;
  if (!options.in_process) {
    const double budget = options.replay.empty() ? options.budget : kMaxBudgetSeconds;
    contained.emplace(case_run_settings(options, argc, argv).workers, budget);
    checker = [&](Property property, const AttentionCase& attention_case) {
      return (*contained)(property, attention_case);
    };
  }
  return options.replay.empty() ? search_properties(options, settings, checker)
                                : replay_properties(options, settings, checker);
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

// This program's own path, for starting copies of it (workers, the plugin probe).
std::string self_executable(const char* argv0) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(argv0) : self.string();
}

// "0,1" -> {"0", "1"}: the GPUs for --devices.
std::vector<std::string> parse_devices(const std::string& list) {
  std::vector<std::string> devices;
  std::size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string device = list.substr(start, end - start);
    if (device.empty() || device.find_first_not_of("0123456789") != std::string::npos) {
      throw HarnessError("--devices: expected GPU indices separated by commas (e.g. 0,1), got '" +
                         list + "'");
    }
    devices.push_back(device);
    start = end + 1;
  }
  return devices;
}

// How this run's cases run: in workers (this same binary, with --worker) or in this process,
// streamed where, resumed from where.
CaseRunSettings case_run_settings(const HarnessOptions& options, int argc, char** argv) {
  CaseRunSettings settings;
  settings.in_process = options.in_process;
  settings.fail_fast = options.fail_fast;
  settings.stream = options.stream;
  if (!options.resume.empty()) {
    if (!options.stream.empty() && options.stream != options.resume) {
      throw HarnessError("--resume appends to the stream it reads; --stream names another file");
    }
    if (!std::filesystem::exists(options.resume)) {
      throw HarnessError("--resume: no such file: " + options.resume);
    }
    settings.resume = options.resume;
    settings.stream = options.resume;
  }
  // Limits past these are typing mistakes, and larger numbers would overflow the deadline's and
  // the byte count's arithmetic (an infinite timeout used to spin a core, a huge limit to wrap
  // negative and switch itself off).
  if (!(options.progress_every >= 0.0 && options.progress_every <= kMaxCaseTimeoutSeconds)) {
    throw HarnessError("--progress-every: must be from 0 (no progress lines) to " +
                       std::to_string(static_cast<long long>(kMaxCaseTimeoutSeconds)) +
                       " seconds, got " + std::to_string(options.progress_every));
  }
  if (!(options.case_timeout >= 0.0 && options.case_timeout <= kMaxCaseTimeoutSeconds)) {
    throw HarnessError("--case-timeout: must be from 0 (no limit) to " +
                       std::to_string(static_cast<long long>(kMaxCaseTimeoutSeconds)) +
                       " seconds, got " + std::to_string(options.case_timeout));
  }
  if (options.memory_limit < 0 || options.memory_limit > kMaxMemoryLimitMebibytes) {
    throw HarnessError("--memory-limit: must be from 0 (3/4 of RAM) to " +
                       std::to_string(kMaxMemoryLimitMebibytes) + " MiB, got " +
                       std::to_string(options.memory_limit));
  }
  WorkerPoolSettings& workers = settings.workers;
  workers.devices = parse_devices(options.devices);
  workers.case_timeout_seconds = options.case_timeout;
  workers.memory_limit_bytes = options.memory_limit > 0
                                   ? options.memory_limit << 20
                                   : default_worker_memory_limit(static_cast<int>(
                                         std::max<std::size_t>(workers.devices.size(), 1)));
  workers.command.push_back(self_executable(argv[0]));
  for (int index = 1; index < argc; ++index) workers.command.emplace_back(argv[index]);
  workers.command.emplace_back("--worker");
  return settings;
}

// How long a plugin may take to load (its constructors and attnfuzz_plugin_* queries) in the probe.
constexpr double kPluginProbeSeconds = 120.0;

// A plugin is loaded first in a child process (fuzz_attention --probe-plugin), so that one whose
// constructor, abi_version, name or site crashes, hangs or exits costs that child, and the run
// ends with exit 3 naming the file instead of dying with SIGSEGV and no word.
void probe_plugin(const std::string& kernel_lib, const char* argv0) {
  const ChildRun probe = run_child(
      {self_executable(argv0), "--probe-plugin", "--kernel-lib", kernel_lib}, kPluginProbeSeconds);
  if (!probe.timed_out && WIFEXITED(probe.wait_status) &&
      WEXITSTATUS(probe.wait_status) == kExitPass) {
    return;
  }
  std::string output = printable_text(probe.output, KeptControls::tab_and_newline);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  const std::string prefix = "fuzz_attention: error: ";
  if (WIFEXITED(probe.wait_status) && WEXITSTATUS(probe.wait_status) == kExitHarnessError &&
      output.rfind(prefix, 0) == 0 && output.find('\n') == std::string::npos) {
    throw HarnessError(output.substr(prefix.size()));  // the loader's own message
  }
  throw HarnessError(
      "--kernel-lib " + kernel_lib + ": loading the plugin " +
      (probe.timed_out
           ? "did not finish within " + std::to_string(int(kPluginProbeSeconds)) + " s"
           : "in a child process, that process " + describe_wait_status(probe.wait_status)) +
      " (its constructors or attnfuzz_plugin_abi_version/name/site); nothing was run" +
      (output.empty() ? "" : "; its output:\n" + output));
}

// --threads and --kernel-lib: the set-up of this process that every mode shares (a plugin's kernel
// is listed by --list-kernels too). Returns the name of the plugin's kernel, or "".
std::string set_up_kernels(const HarnessOptions& options, const char* argv0) {
  apply_thread_count(options.threads);
  if (!options.kernel_lib.empty() && !options.worker && !options.probe_plugin) {
    probe_plugin(options.kernel_lib, argv0);
  }
  return load_kernel_lib(options.kernel_lib);
}

// The report of a run about to start: where it runs, which matrix, when.
RunReport start_report(const CaseMatrix& matrix, const RunSettings& settings) {
  RunReport report;
  report.environment = describe_environment(backend_name(settings.backend));
  if (settings.numerics.declared()) {
    report.environment.numerics.emplace_back(
        "declared_accumulation",
        accumulation_name(settings.numerics) +
            " for P V and the row sum (--accumulation): the bounds and the plain reference follow "
            "it, the bias test is off (docs/tolerance.md, Declared numerics)");
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

// Off a terminal (a CI log, where a two-hour GPU run would otherwise say nothing until its end): a
// line on stderr at most every --progress-every seconds, as cases finish: counts, failures so
// far, the time taken and an estimate of the time left.
class ProgressLog {
 public:
  ProgressLog(double every_seconds, std::size_t total) : every_(every_seconds), total_(total) {}

  void finished(const CaseResult& result) {
    ++finished_;
    failed_ += result.status == CaseStatus::fail ? 1 : 0;
    skipped_ += result.status == CaseStatus::skip ? 1 : 0;
    if (every_ <= 0 || seconds_since(last_) < every_) return;
    last_ = std::chrono::steady_clock::now();
    const double elapsed = seconds_since(started_);
    const double left = elapsed / static_cast<double>(finished_) *
                        static_cast<double>(total_ > finished_ ? total_ - finished_ : 0);
    std::cerr << "progress: " << finished_ << "/" << total_ << " cases, " << failed_ << " failed, "
              << skipped_ << " skipped, " << fixed_decimals(elapsed, 0) << " s, about "
              << fixed_decimals(left, 0) << " s left\n"
              << std::flush;
  }

 private:
  double every_;
  std::size_t total_, finished_ = 0, failed_ = 0, skipped_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = started_;
};

// Runs the cases, printing each result's table row as it finishes (with --quiet only failures and
// skips; replayed cases also as JSON) and a progress line on stderr: kept up to date on a
// terminal, now and then otherwise (ProgressLog).
CaseRunOutcome run_showing_progress(const HarnessOptions& options, const CaseRunner& runner,
                                    const std::vector<AttentionCase>& cases,
                                    const CaseRunSettings& case_run) {
  if (!options.quiet) write_table_header(std::cout);
  const bool replaying = !options.replay.empty();
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  ProgressLog log(show_progress ? 0.0 : options.progress_every, cases.size());
  std::size_t finished = 0;
  CaseRunOutcome outcome = run_cases(runner, cases, case_run, [&](const CaseResult& result) {
    ++finished;
    log.finished(result);
    if (show_progress) std::cerr << "\r\033[K" << std::flush;
    if (!options.quiet || result.status != CaseStatus::pass) write_table_row(std::cout, result);
    if (replaying) print_replayed_case(std::cout, result);
    std::cout.flush();
    if (show_progress) {
      std::cerr << "[" << finished << "/" << cases.size() << "] "
                << printable_text(result.attention_case.id, KeptControls::tab_and_newline)
                << std::flush;
    }
  });
  if (show_progress) std::cerr << "\r\033[K" << std::flush;
  if (outcome.resumed > 0) {
    std::cout << "resumed " << outcome.resumed << " finished cases from " << options.resume << "\n";
  }
  return outcome;
}

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

// --bench: what the run's report says of the measurement before it starts, and the baseline, read
// and checked to be comparable (else exit 3 before any case runs, unless --compare-anyway).
struct BenchStart {
  BenchReport report;
  std::optional<Baseline> baseline;
};

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

// The lines under the run header of a --bench run: how cases are timed, against what, and any
// warning about the machine.
void print_bench_header(std::ostream& out, const BenchReport& bench) {
  out << "bench: each passing case timed in " << bench.settings.rounds << " rounds of up to "
      << significant_digits(bench.settings.seconds_per_case / bench.settings.rounds, 3)
      << " s, each until its median's 95% interval is within "
      << significant_digits(bench.settings.target_ci_width * 100, 3) << "%; device "
      << bench.identity.device << ", driver " << bench.identity.driver << "\n";
  if (!bench.baseline_path.empty()) {
    out << "bench: against the baseline " << bench.baseline_path << ", a case slower by more than "
        << significant_digits(bench.max_slowdown * 100, 3) << "% at 95% confidence fails\n";
  }
  for (const std::string& warning : bench.warnings) out << "bench: warning: " << warning << "\n";
}

// --bench, once every case has run: the later timing rounds, the gate's verdicts, the machine's
// state after, and the performance table.
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

// The report files a run writes: each flag asked for, its path and how to render it.
struct ReportFile {
  const char* flag;
  const std::string& path;
  std::function<std::string()> render;
};

std::vector<ReportFile> report_files(const HarnessOptions& options, const RunReport& report,
                                     const ReplayOf& replay_of) {
  return {
      {"--json", options.json, [&] { return json_text(run_to_json(report), 2) + "\n"; }},
      {"--junit", options.junit, [&] { return run_to_junit_xml(report, replay_of); }},
      {"--markdown", options.markdown, [&] { return run_to_markdown(report, replay_of); }},
      {"--html", options.html, [&] { return run_to_html(report, replay_of); }},
  };
}

// A report path of "-" is standard output. The run's own lines then go to stderr, so that stdout
// carries the report alone (e.g. `--json - | jq`).
constexpr std::string_view kStandardOutput = "-";

// Standard output as it was when the program started, before check_outputs sends std::cout to
// stderr.
std::ostream& report_stdout() {
  static std::ostream stream(std::cout.rdbuf());
  return stream;
}

// Before the first case: every output the run will write can be written, so that a typo in a
// report path costs a second, not the whole run; at most one report goes to standard output, and
// when one does, the table goes to stderr.
void check_outputs(const HarnessOptions& options) {
  const RunReport nothing_yet;
  const char* on_stdout = nullptr;
  for (const ReportFile& file : report_files(options, nothing_yet, nullptr)) {
    if (file.path == kStandardOutput) {
      if (on_stdout != nullptr) {
        throw HarnessError(std::string(on_stdout) + " and " + file.flag +
                           " both name standard output (-): only one report can go there");
      }
      on_stdout = file.flag;
    } else if (!file.path.empty()) {
      check_file_writable(file.path, file.flag);
    }
  }
  if (on_stdout != nullptr) {
    report_stdout();  // keeps the real stdout before it is redirected
    std::cout.rdbuf(std::cerr.rdbuf());
  }
}

// The Markdown report is added to what its file holds already: $GITHUB_STEP_SUMMARY collects every
// step's summary, and a second run's report must not erase the first's.
std::string with_earlier_content(const ReportFile& file, std::string text) {
  if (std::string_view(file.flag) != "--markdown") return text;
  std::error_code error;
  if (!std::filesystem::is_regular_file(file.path, error)) return text;
  std::string earlier = read_file(file.path);
  if (!earlier.empty() && earlier.back() != '\n') earlier += '\n';
  return earlier.empty() ? text : earlier + "\n" + text;
}

// --json, --junit, --markdown, --html: each report file asked for, written atomically. A report
// that cannot be written is named on stderr and the others are still written; returns false when
// any failed.
bool write_report_files(const HarnessOptions& options, const RunReport& report,
                        const ReplayOf& replay_of) {
  bool all_written = true;
  for (const ReportFile& file : report_files(options, report, replay_of)) {
    if (file.path.empty()) continue;
    try {
      if (file.path == kStandardOutput) {
        report_stdout() << file.render() << std::flush;
      } else {
        write_file_atomically(file.path, with_earlier_content(file, file.render()));
      }
    } catch (const HarnessError& error) {
      std::cerr << "fuzz_attention: error: " << file.flag << ": " << error.what() << "\n";
      all_written = false;
    }
  }
  return all_written;
}

// The exit code of a run whose reports were written or not: a failing case's 1 comes first (a
// report that could not be written must not hide a broken kernel), then 3 for the lost report,
// then the run's own 2 or 0.
int exit_code_of(const RunReport& report, bool reports_written) {
  if (report.summary.exit_code == kExitFail || reports_written) return report.summary.exit_code;
  return kExitHarnessError;
}

// The matrix run (or --replay of case files): reads the plan, then saves its cases (--save-cases),
// serves them (--worker) or runs them and prints and writes the reports.
int run_matrix(const HarnessOptions& options, const RunSettings& settings, int argc, char** argv) {
  const RunPlan plan = plan_of(options);
  const std::vector<AttentionCase> cases = cases_to_run(options, plan);
  if (!options.save_cases.empty()) return save_cases(cases, options.save_cases);
  const CaseRunner runner(settings);
  for (const AttentionCase& attention_case : cases) runner.validate(attention_case);
  const CaseRunSettings case_run = case_run_settings(options, argc, argv);
  check_outputs(options);

  RunReport report = start_report(plan.matrix, settings);
  std::optional<BenchGate> gate;
  if (options.bench) {
    BenchStart bench = start_bench(options, plan, runner, cases, report.environment);
    report.bench = std::move(bench.report);
    gate.emplace(std::move(bench.baseline), options.max_slowdown);
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
  const std::string plugin_kernel = set_up_kernels(options, argv[0]);
  if (options.probe_plugin) {
    std::cout << plugin_kernel << "\n";
    return kExitPass;
  }
  if (options.list_kernels) {
    list_kernels(std::cout);
    return kExitPass;
  }
  const RunSettings settings = run_settings_of(options, plugin_kernel);
  // A worker runs the cases its supervisor sends, each whole (it reads no matrix of its own): a
  // matrix run's cases, or the property search's checks.
  if (options.worker) {
    const CaseRunner runner(settings);
    return serve_requests([&](const AttentionCase& attention_case, const nlohmann::json& request) {
      if (is_timing_request(request)) return answer_timing_request(runner, attention_case);
      return ContainedPropertyCheck::is_property_request(request)
                 ? ContainedPropertyCheck::answer_property_request(attention_case, request,
                                                                   settings)
                 : run_case_request(runner, attention_case);
    });
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
