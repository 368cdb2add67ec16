// fuzz_attention: runs a matrix of attention cases on a kernel under test and judges each against
// the float64 oracle. Exit codes: 0 pass, 1 fail, 2 nothing could run, 3 harness error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <set>

#include "core/parallel_for.h"
#include "fuzz/build_info.h"
#include "fuzz/case_runner.h"
#include "fuzz/exit_codes.h"
#include "fuzz/harness_error.h"
#include "fuzz/harness_options.h"
#include "fuzz/matrix_file.h"
#include "fuzz/report_writers.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

constexpr std::string_view kDefaultMatrix = "pr.json";

void list_kernels(std::ostream& out) {
  for (const AttentionKernel* kernel : all_kernels()) {
    out << kernel->name() << " ("
        << (kernel->site() == ExecutionSite::host ? "host" : "CUDA device")
        << "): " << kernel->summary() << "\n  supports: " << kernel->capabilities()
        << "\n  plants:\n";
    for (PlantedBug plant : kernel->plants()) {
      const PlantedBugInfo& info = kPlantedBugs[static_cast<int>(plant) - 1];
      out << "    " << info.name << ": " << info.effect << " (" << info.origin << ")\n";
    }
  }
}

Backend parse_backend(const std::string& name) {
  for (Backend backend : {Backend::auto_select, Backend::cpu, Backend::cuda}) {
    if (backend_name(backend) == name) return backend;
  }
  throw HarnessError("--backend: unknown backend '" + name + "' (auto, cpu or cuda)");
}

std::vector<AttentionCase> select_cases(const CaseMatrix& matrix,
                                        const std::vector<std::string>& ids) {
  if (ids.empty()) return matrix.cases;
  std::vector<AttentionCase> selected;
  for (const std::string& id : ids) {
    bool found = false;
    for (const AttentionCase& attention_case : matrix.cases) {
      if (attention_case.id == id) {
        selected.push_back(attention_case);
        found = true;
      }
    }
    if (!found) throw HarnessError("--case: no case '" + id + "' in " + matrix.source);
  }
  return selected;
}

// `text` as one shell word: unchanged when it needs no quoting, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_./:=@%+-") == std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string replay_command(const HarnessOptions& options, const CaseResult& result) {
  std::string command = "fuzz_attention";
  if (!options.configs.empty()) command += " --configs " + shell_word(options.configs);
  command += " --case " + shell_word(result.attention_case.id) + " --kernel " + result.kernel_name;
  if (result.plant != "none") command += " --plant " + result.plant;
  return command;
}

int run(int argc, char** argv) {
  const HarnessOptions options = parse_harness_options(argc, argv);
  if (options.threads < 0) throw HarnessError("--threads: must be >= 0");
  set_default_thread_count(options.threads);
  if (options.list_kernels) {
    list_kernels(std::cout);
    return kExitPass;
  }
  RunSettings settings;
  settings.backend = parse_backend(options.backend);
  settings.kernel = options.kernel;
  const std::optional<PlantedBug> plant = parse_planted_bug(options.plant);
  if (!plant) throw HarnessError("--plant: unknown planted bug '" + options.plant + "'");
  settings.plant = *plant;

  const CaseMatrix matrix = options.configs.empty()
                                ? load_built_in_matrix(std::string(kDefaultMatrix))
                                : load_matrix_file(options.configs);
  const std::vector<AttentionCase> cases = select_cases(matrix, options.case_ids);
  const CaseRunner runner(settings);
  for (const AttentionCase& attention_case : cases) runner.validate(attention_case);

  RunReport report;
  report.environment = describe_environment(backend_name(settings.backend));
  report.summary.matrix_name = matrix.name;
  report.summary.matrix_source = matrix.source;
  const auto started = std::chrono::steady_clock::now();
  report.summary.started_at = utc_timestamp();

  std::cout << "fuzz_attention: " << cases.size() << " cases from " << matrix.source << ", backend "
            << options.backend << " (" << report.environment.cuda << "), "
            << report.environment.threads << " threads, plant " << options.plant << "\n";
  if (!options.quiet) write_table_header(std::cout);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  for (std::size_t index = 0; index < cases.size(); ++index) {
    if (show_progress) {
      std::cerr << "\r[" << index + 1 << "/" << cases.size() << "] " << cases[index].id << "   "
                << std::flush;
    }
    CaseResult result = runner.run(cases[index]);
    if (show_progress) std::cerr << "\r\033[K" << std::flush;
    if (!options.quiet || result.status != CaseStatus::pass) write_table_row(std::cout, result);
    std::cout.flush();
    report.results.push_back(std::move(result));
  }
  report.summary.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  summarize(report);

  bool first_failure = true;
  for (const CaseResult& result : report.results) {
    if (result.status != CaseStatus::fail) continue;
    if (first_failure) std::cout << "\nreplay a failing case:\n";
    first_failure = false;
    std::cout << "  " << replay_command(options, result) << "\n";
  }
  std::cout << "\n";
  write_table_summary(std::cout, report);
  if (!options.json.empty()) {
    write_file_atomically(options.json, run_to_json(report).dump(2) + "\n");
  }
  if (!options.junit.empty()) write_file_atomically(options.junit, run_to_junit_xml(report));
  return report.summary.exit_code;
}

}  // namespace
}  // namespace attnfuzz

int main(int argc, char** argv) {
  try {
    return attnfuzz::run(argc, argv);
  } catch (const attnfuzz::HarnessError& error) {
    std::cerr << "fuzz_attention: error: " << error.what() << "\n";
  } catch (const std::exception& error) {
    std::cerr << "fuzz_attention: internal error: " << error.what() << "\n";
  }
  return attnfuzz::kExitHarnessError;
}
