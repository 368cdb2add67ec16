// SPDX-License-Identifier: BSD-3-Clause
// What keeping a kernel's inputs as evidence costs (run/kernel_inputs.h): on every case of the
// default matrix (corpus/matrix/pr.json) that cpu_flash runs, the time of the added work (copying
// the inputs and index arrays the kernel is handed, and comparing them with the originals after
// the call, once per kernel call) against the time of the whole case as a run makes it
// (CaseRunner::run: two kernel calls, the oracle, the checks). Both are measured in this one run,
// case by case, each the median of --repeats timings.
//
//   bench_kernel_inputs [--repeats N] [--matrix NAME]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "case/data_distribution.h"
#include "core/clock.h"
#include "matrix/matrix_file.h"
#include "run/case_runner.h"
#include "run/kernel_inputs.h"

namespace {

using namespace attnfuzz;

template <typename Body>
double median_seconds(int repeats, Body body) {
  std::vector<double> seconds;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const auto started = std::chrono::steady_clock::now();
    body();
    seconds.push_back(seconds_since(started));
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::string matrix_name = "pr.json";
  for (int arg = 1; arg + 1 < argc; arg += 2) {
    if (std::strcmp(argv[arg], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[arg + 1]));
    if (std::strcmp(argv[arg], "--matrix") == 0) matrix_name = argv[arg + 1];
  }
  RunSettings settings;
  settings.backend = Backend::cpu;
  const CaseRunner runner(settings);
  double case_seconds = 0.0, evidence_seconds = 0.0;
  int cases = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix(matrix_name).cases) {
    const CaseResult first = runner.run(attention_case);  // also warms the caches
    if (first.status == CaseStatus::skip) continue;
    ++cases;
    case_seconds += median_seconds(repeats, [&] { (void)runner.run(attention_case); });
    const AttentionProblem problem = problem_of(attention_case);
    const AttentionInputs inputs = generate_inputs(problem, attention_case.data,
                                                   attention_case.seed, attention_case.injection);
    // Per kernel call: the copies handed over, and the comparison after; a case makes
    // settings.repeats calls.
    evidence_seconds += settings.repeats * median_seconds(repeats, [&] {
                          const KernelInputs handed = KernelInputs::copy_of(problem, inputs);
                          if (find_changed_input(problem, inputs, handed)) std::abort();
                        });
  }
  std::printf("%d cases of %s on cpu_flash, medians of %d timings each\n", cases,
              matrix_name.c_str(), repeats);
  std::printf("  whole cases (CaseRunner::run, evidence included): %.3f s\n", case_seconds);
  std::printf("  inputs kept as evidence (copy + compare, %d calls a case): %.3f s\n",
              settings.repeats, evidence_seconds);
  std::printf("  the evidence's share of the run: %.2f%%\n",
              100.0 * evidence_seconds / case_seconds);
  return 0;
}
