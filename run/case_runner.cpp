// SPDX-License-Identifier: BSD-3-Clause
#include "run/case_runner.h"

#include <chrono>
#include <exception>
#include <new>

#include "case/data_distribution.h"
#include "core/clock.h"
#include "core/harness_error.h"
#include "core/problem_features.h"
#include "core/text.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "oracle/cublas_reference.h"
#include "oracle/plain_attention.h"
#include "oracle/reference_attention.h"
#include "oracle/tolerance.h"
#include "run/device_staging.h"
#include "run/guarded_output.h"
#include "run/kernel_timer.h"
#include "run/repeat_difference.h"

namespace attnfuzz {
namespace {

// The inputs' guard tail (case/data_distribution.h) holds a whole tile of the largest block a
// built-in kernel reads, so that an unmasked tile past seq_len reads poison, not foreign memory.
static_assert(kLargestBlockM <= kInputGuardRows && kLargestBlockN <= kInputGuardRows,
              "a tile read past the end must stay in the guard tail");

constexpr std::string_view kDefaultCpuKernel = "cpu_flash";
constexpr std::string_view kDefaultCudaKernel = "cuda_flash";
// From this many flops on, `--oracle auto` judges a device kernel with the cuBLAS oracle: the
// seed's largest cases (B=48 H=16 S=640 D=64, 20 GFLOP) take the CPU oracle seconds on a laptop's
// cores and the GPU's FP64 units milliseconds; below it, copying doubles to the device costs more
// than it saves.
constexpr double kDeviceOracleMinFlops = 2e9;
constexpr std::string_view kCpuOracle = "cpu_float64";
constexpr std::string_view kCudaOracle = "cuda_cublas_float64";

}  // namespace

std::string_view backend_name(Backend backend) {
  constexpr std::string_view names[] = {"auto", "cpu", "cuda"};
  return names[static_cast<int>(backend)];
}

std::string_view oracle_choice_name(OracleChoice choice) {
  constexpr std::string_view names[] = {"auto", "cpu", "cuda"};
  return names[static_cast<int>(choice)];
}

CaseRunner::CaseRunner(RunSettings settings) : settings_(std::move(settings)) {}

std::string CaseRunner::kernel_for(const AttentionCase& attention_case) const {
  if (!settings_.kernel.empty()) return settings_.kernel;
  if (!attention_case.kernel.empty()) return attention_case.kernel;
  const bool use_cuda = settings_.backend == Backend::cuda ||
                        (settings_.backend == Backend::auto_select && cuda_device_status().usable &&
                         find_kernel(kDefaultCudaKernel) != nullptr);
  return std::string(use_cuda ? kDefaultCudaKernel : kDefaultCpuKernel);
}

void CaseRunner::validate(const AttentionCase& attention_case) const {
  const bool named = !settings_.kernel.empty() || !attention_case.kernel.empty();
  const std::string name = kernel_for(attention_case);
  const AttentionKernel* kernel = find_kernel(name);
  if (kernel == nullptr) {
    if (!named) return;  // a backend default missing from this build is a skip, not an error
    std::vector<std::string_view> known;
    for (const AttentionKernel* each : all_kernels()) known.push_back(each->name());
    throw HarnessError("case " + attention_case.id + ": unknown kernel '" + name +
                       "' (this build has: " + join_names(known, " ") + ")");
  }
  if (!kernel->carries(settings_.plant)) {
    throw HarnessError("kernel " + name + " has no planted bug '" +
                       std::string(planted_bug_name(settings_.plant)) +
                       "' (fuzz_attention --list-kernels shows each kernel's plants)");
  }
}

KernelCall run_kernel(const AttentionKernel& kernel, const AttentionProblem& problem,
                      const AttentionInputs& inputs, PlantedBug plant, GuardedOutput& output) {
  if (kernel.site() == ExecutionSite::cuda_device) {
    return run_kernel_on_device(kernel, problem, inputs, plant, output);
  }
  // Not const: a kernel may write through the pointers it is handed, which is what is checked.
  KernelInputs handed = KernelInputs::copy_of(problem, inputs);
  try {
    kernel.forward(problem, handed.bind(output.data(), output.lse()), plant);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory: the case is skipped, not failed (CaseRunner::run)
  } catch (const std::exception& error) {
    return {"kernel " + std::string(kernel.name()) + " failed: " + error.what(), std::nullopt};
  }
  return {"", find_changed_input(problem, inputs, handed)};
}

KernelChoice CaseRunner::choose_kernel(const AttentionCase& attention_case) const {
  KernelChoice choice;
  choice.name = kernel_for(attention_case);
  const AttentionKernel* kernel = find_kernel(choice.name);
  const bool wants_cuda = settings_.backend == Backend::cuda ||
                          (kernel != nullptr && kernel->site() == ExecutionSite::cuda_device);
  if (wants_cuda && !cuda_device_status().usable) {
    choice.skip_reason = "CUDA backend unavailable: " + cuda_device_status().description;
  } else if (settings_.oracle == OracleChoice::cuda && !cuda_device_status().usable) {
    choice.skip_reason = "cuBLAS oracle unavailable: " + cuda_device_status().description;
  } else if (kernel == nullptr) {
    choice.skip_reason = "kernel " + choice.name + " is not in this build";
  } else if (const SupportVerdict verdict = kernel->supports(problem_of(attention_case));
             !verdict.supported) {
    choice.skip_reason = verdict.reason;
    choice.skip_cause = SkipCause::unsupported;
  } else {
    choice.kernel = kernel;
  }
  return choice;
}

CaseResult CaseRunner::run(const AttentionCase& attention_case) const {
  const auto started = std::chrono::steady_clock::now();
  try {
    return run_unguarded(attention_case);
  } catch (const std::bad_alloc&) {
    CaseResult result =
        unfinished_result(attention_case, CaseStatus::skip,
                          "out of memory: an allocation for this case failed (std::bad_alloc)");
    result.total_seconds = seconds_since(started);
    return result;
  }
}

KernelPerformance CaseRunner::time_round(const AttentionCase& attention_case) const {
  const KernelChoice choice = choose_kernel(attention_case);
  if (choice.kernel == nullptr) throw std::runtime_error(choice.skip_reason);
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  return time_kernel(*choice.kernel, problem, inputs, settings_.plant, settings_.bench);
}

CaseResult CaseRunner::unfinished_result(const AttentionCase& attention_case, CaseStatus status,
                                         std::string reason) const {
  CaseResult result;
  result.attention_case = attention_case;
  result.kernel_name = kernel_for(attention_case);
  result.plant = std::string(planted_bug_name(settings_.plant));
  result.status = status;
  result.skip_cause = SkipCause::unavailable;
  result.reason = std::move(reason);
  result.timestamp = utc_timestamp();
  return result;
}

CaseResult CaseRunner::run_unguarded(const AttentionCase& attention_case) const {
  const auto started = std::chrono::steady_clock::now();
  const KernelChoice choice = choose_kernel(attention_case);
  CaseResult result;
  result.attention_case = attention_case;
  result.kernel_name = choice.name;
  result.plant = std::string(planted_bug_name(settings_.plant));
  auto finish = [&](CaseStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
    result.total_seconds = seconds_since(started);
    result.timestamp = utc_timestamp();
    return result;
  };
  if (choice.kernel == nullptr) {
    result.skip_cause = choice.skip_cause;
    return finish(CaseStatus::skip, choice.skip_reason);
  }

  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  GuardedOutput output(problem);
  const auto kernel_started = std::chrono::steady_clock::now();
  const KernelCall call = run_kernel(*choice.kernel, problem, inputs, settings_.plant, output);
  result.kernel_seconds = seconds_since(kernel_started);
  if (!call.error.empty()) return finish(CaseStatus::fail, call.error);
  result.ran = true;

  // The same inputs again, each run into a fresh poisoned output: bitwise the same as the first,
  // or (allow_nondeterminism) kept to be judged against the oracle below.
  std::vector<GuardedOutput> repeats;
  std::optional<std::string> repeat_fault;
  const auto repeats_started = std::chrono::steady_clock::now();
  for (int run = 2; run <= settings_.repeats && !repeat_fault; ++run) {
    GuardedOutput& again = repeats.emplace_back(problem);
    const KernelCall call_again =
        run_kernel(*choice.kernel, problem, inputs, settings_.plant, again);
    if (!call_again.error.empty()) {
      repeat_fault = "run " + std::to_string(run) + ": " + call_again.error;
    } else if (call_again.changed_input && !call.changed_input) {
      repeat_fault = "run " + std::to_string(run) + ": " + *call_again.changed_input;
    } else if (std::optional<std::string> stray = again.find_stray_write()) {
      repeat_fault = "run " + std::to_string(run) + ": " + *stray;
    } else if (!settings_.allow_nondeterminism) {
      repeat_fault = find_repeat_difference(problem, output.data(), again.data(), run);
      if (!repeat_fault && problem.return_lse) {
        repeat_fault = find_lse_repeat_difference(problem, output.lse(), again.lse(), run);
      }
      repeats.pop_back();
    }
  }
  result.repeat_seconds = seconds_since(repeats_started);

  const auto oracle_started = std::chrono::steady_clock::now();
  const AttentionTensors tensors{inputs.q.data(), inputs.k.data(), inputs.v.data(), nullptr};
  const bool on_device = choice.kernel->site() == ExecutionSite::cuda_device;
  // The cuBLAS oracle computes dense attention only: a case with a variant (varlen, paging,
  // windows, soft-capping, ALiBi, the log-sum-exp) is judged on the CPU, and its report says so.
  const bool use_cublas =
      features_of(problem) == 0 && (settings_.oracle == OracleChoice::cuda ||
                                    (settings_.oracle == OracleChoice::auto_select && on_device &&
                                     attention_flops(problem) >= kDeviceOracleMinFlops));
  // Kept from case to case: the oracle overwrites every element, and storage that is already the
  // right size costs neither an allocation nor page faults (its arrays are tens of MiB per case).
  thread_local ReferenceAttention reference;
  if (use_cublas) {
    try {
      reference = cublas_reference_attention(problem, tensors);
    } catch (const std::exception& error) {
      return finish(CaseStatus::fail, std::string("cuBLAS oracle failed: ") + error.what());
    }
  } else {
    reference_attention(problem, tensors, reference);
  }
  const std::vector<float> plain = plain_attention(problem, tensors, 0, settings_.numerics);
  result.oracle = std::string(use_cublas ? kCudaOracle : kCpuOracle);
  result.comparison = compare_to_reference(problem, reference, plain, output.data(),
                                           settings_.numerics, output.lse());
  // A kernel allowed to be nondeterministic is judged on every run: the figures are the worst's.
  for (std::size_t index = 0; index < repeats.size() && !result.comparison.failed; ++index) {
    Comparison again = compare_to_reference(problem, reference, plain, repeats[index].data(),
                                            settings_.numerics, repeats[index].lse());
    if (again.failed || again.error_ratio > result.comparison.error_ratio) {
      if (again.failed) again.reason = "run " + std::to_string(index + 2) + ": " + again.reason;
      result.comparison = std::move(again);
    }
  }
  result.oracle_seconds = seconds_since(oracle_started);

  // Every fault found, the comparison's first: it names the element a kernel author looks at.
  std::vector<std::string> faults;
  if (result.comparison.failed) faults.push_back(result.comparison.reason);
  if (call.changed_input) faults.push_back(*call.changed_input);
  if (std::optional<std::string> stray = output.find_stray_write()) faults.push_back(*stray);
  if (repeat_fault) faults.push_back(*repeat_fault);
  if (!faults.empty()) return finish(CaseStatus::fail, join_names(faults, "; and "));
  if (result.comparison.inconclusive) {
    result.skip_cause = SkipCause::inconclusive;
    return finish(CaseStatus::skip, result.comparison.reason);
  }
  // Nothing to judge is no pass: a packed batch whose every sequence is empty has no output
  // element (the kernel ran all the same, and wrote nothing it must not, nor changed an input).
  if (problem.query_rows() == 0) {
    result.skip_cause = SkipCause::inconclusive;
    return finish(CaseStatus::skip,
                  "no output to judge: every sequence of seq_lens_q is empty (no query row)");
  }
  // Only a kernel that computed the case right is timed: a wrong kernel's speed means nothing.
  if (settings_.bench.enabled) {
    try {
      result.performance =
          time_kernel(*choice.kernel, problem, inputs, settings_.plant, settings_.bench);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& error) {
      return finish(CaseStatus::fail, std::string("while timing: ") + error.what());
    }
  }
  return finish(CaseStatus::pass, "");
}

}  // namespace attnfuzz
