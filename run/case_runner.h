// SPDX-License-Identifier: BSD-3-Clause
// Runs one case end to end: picks the kernel, checks it can run here, generates the inputs,
// runs the kernel on a poisoned and fenced output, computes the oracle, and judges.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case/data_distribution.h"
#include "kernels/attention_kernel.h"
#include "oracle/declared_numerics.h"
#include "perf/kernel_performance.h"
#include "run/case_result.h"
#include "run/guarded_output.h"
#include "run/kernel_inputs.h"

namespace attnfuzz {

enum class Backend { auto_select, cpu, cuda };
// Which float64 reference judges a case: auto picks cuBLAS for large cases whose kernel ran on a
// CUDA device (the data is on the GPU already and the CPU would take seconds), the CPU otherwise.
enum class OracleChoice { auto_select, cpu, cuda };

// The reference of a side-by-side benchmark (fuzz_attention --bench --against-*).
struct ReferenceKernel {
  std::string kernel;  // empty: the case's own kernel (--against-plant alone)
  PlantedBug plant = PlantedBug::none;
};

struct RunSettings {
  Backend backend = Backend::auto_select;
  OracleChoice oracle = OracleChoice::auto_select;
  std::string kernel;  // overrides every case's kernel when set
  PlantedBug plant = PlantedBug::none;
  std::string kernel_lib;  // the plugin the kernel was loaded from, for replay commands; or empty
  // The Python function the kernel is (--kernel-py), with its --python and --py-framework, for
  // replay commands: flag and value pairs; empty for any other kernel.
  std::vector<std::pair<std::string, std::string>> kernel_py_flags;
  // How many times each case runs its kernel on the same inputs, each into a freshly poisoned
  // output. From 2 on, every run must write the same bits as the first (run/repeat_difference.h);
  // with allow_nondeterminism each run is judged against the oracle on its own instead.
  int repeats = 2;
  bool allow_nondeterminism = false;
  // A device kernel's case checked on the host (--host-verification): the inputs drawn there, the
  // oracle and the comparison run there, as they did before the device path (run/device_case.h).
  bool host_verification = false;
  // The kernel declares shape-independent arithmetic (--shape-independent-arithmetic), beside
  // what a built-in kernel declares itself (AttentionKernel::shape_independent_arithmetic).
  bool shape_independent_arithmetic = false;
  // What the kernel declares it does differently from the locked numerics (--accumulation,
  // --probabilities): the oracle's bounds and plain reference follow it.
  DeclaredNumerics numerics;
  // fuzz_attention --bench: a case that passes is then timed (run/kernel_timer.h).
  BenchSettings bench;
  // fuzz_attention --bench --against-*: the kernel each timed case is timed beside, side by side
  // (run/kernel_timer.h, time_side_by_side), after it too has passed the case.
  std::optional<ReferenceKernel> reference = {};
};

std::string_view backend_name(Backend backend);
std::string_view oracle_choice_name(OracleChoice choice);

// The kernel a case runs on here, or why it cannot run (the skip reason).
struct KernelChoice {
  std::string name;
  const AttentionKernel* kernel = nullptr;  // null when skipped
  std::string skip_reason;
  SkipCause skip_cause = SkipCause::unavailable;
};

// Runs `kernel` on copies of `inputs` and of the problem's index arrays into `output` (through
// device memory when the kernel runs on a CUDA device), then checks the copies against the
// originals, which the kernel never sees.
KernelCall run_kernel(const AttentionKernel& kernel, const AttentionProblem& problem,
                      const AttentionInputs& inputs, PlantedBug plant, GuardedOutput& output);

class CaseRunner {
 public:
  explicit CaseRunner(RunSettings settings);

  // Throws HarnessError when the case names an unknown kernel or one without the planted bug.
  void validate(const AttentionCase& attention_case) const;

  // A case that runs out of memory (std::bad_alloc anywhere in it) is skipped with that reason.
  CaseResult run(const AttentionCase& attention_case) const;

  // Timing round `round` (from 2: the first comes with the case's run) of the case's kernel
  // (run/kernel_timer.h), without the correctness check (it passed in its first round); beside the
  // reference kernel when `side_by_side` (the first round was). Throws std::runtime_error when a
  // kernel cannot run or fails.
  KernelPerformance time_round(const AttentionCase& attention_case, int round,
                               bool side_by_side) const;

  // The runner of the reference kernel (settings().reference): this one's settings with its kernel
  // and plant, timing nothing.
  CaseRunner reference_runner() const;

  // Which kernel runs the case, or why none can (no GPU, not in this build, unsupported shape).
  KernelChoice choose_kernel(const AttentionCase& attention_case) const;

  const RunSettings& settings() const { return settings_; }

  // The record of a case that did not run to a verdict of its own (out of memory, a lost worker):
  // the kernel and plant it would have run with, `status` and `reason`, stamped now.
  CaseResult unfinished_result(const AttentionCase& attention_case, CaseStatus status,
                               std::string reason) const;

  // The kernel a case runs on under these settings (may not exist in this build: cuda_flash).
  std::string kernel_for(const AttentionCase& attention_case) const;

 private:
  CaseResult run_unguarded(const AttentionCase& attention_case) const;

  RunSettings settings_;
};

}  // namespace attnfuzz
