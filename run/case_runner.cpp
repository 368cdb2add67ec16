// SPDX-License-Identifier: BSD-3-Clause
#include "run/case_runner.h"

#include <chrono>
#include <exception>
#include <functional>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "case/data_distribution.h"
#include "core/clock.h"
#include "core/harness_error.h"
#include "core/problem_features.h"
#include "core/splitmix.h"
#include "core/text.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "oracle/cublas_reference.h"
#include "oracle/device_plain_attention.h"
#include "oracle/plain_attention.h"
#include "oracle/reference_attention.h"
#include "oracle/tolerance.h"
#include "run/backward_check.h"
#include "run/case_evidence.h"
#include "run/device_case.h"
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
// On the host path (--host-verification, a declared accumulation), from this many flops on
// `--oracle auto` judges a dense case of a device kernel with the cuBLAS oracle: the seed's largest
// cases (B=48 H=16 S=640 D=64, 20 GFLOP) take the CPU oracle seconds on a laptop's cores and the
// GPU's FP64 units milliseconds; below it, copying the inputs over costs more than it saves.
constexpr double kDeviceOracleMinFlops = 2e9;

// Every fault a pass (forward or backward) found, as one reason: the comparison's first, since it
// names the element a kernel author looks at; none when there is none.
std::optional<std::string> joined_faults(std::initializer_list<std::optional<std::string>> faults) {
  std::vector<std::string> found;
  for (const std::optional<std::string>& fault : faults) {
    if (fault) found.push_back(*fault);
  }
  if (found.empty()) return std::nullopt;
  return join_names(found, "; and ");
}

std::optional<std::string> failure_of(bool failed, const std::string& reason) {
  return failed ? std::optional<std::string>(reason) : std::nullopt;
}

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
  if (settings_.reference) {
    const CaseRunner reference = reference_runner();
    try {
      reference.validate(attention_case);
    } catch (const HarnessError& error) {
      throw HarnessError(std::string("the reference (--against-*): ") + error.what());
    }
    const AttentionKernel* reference_kernel = find_kernel(reference.kernel_for(attention_case));
    if (reference_kernel != nullptr && reference_kernel->site() != kernel->site()) {
      throw HarnessError("the reference (--against-*) " + std::string(reference_kernel->name()) +
                         " and the kernel " + name +
                         " run in different places (the host, a CUDA device): side by side, "
                         "both run where the other does");
    }
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
  } else if (const SupportVerdict backward =
                 attention_case.backward
                     ? kernel->backward_support(backward_problem_of(attention_case))
                     : SupportVerdict::yes();
             !backward.supported) {
    choice.skip_reason = backward.reason;
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
    result.timing.total_seconds = seconds_since(started);
    return result;
  }
}

CaseRunner CaseRunner::reference_runner() const {
  RunSettings settings = settings_;
  if (!settings_.reference->kernel.empty()) settings.kernel = settings_.reference->kernel;
  settings.plant = settings_.reference->plant;
  settings.bench.enabled = false;
  settings.reference.reset();
  return CaseRunner(std::move(settings));
}

namespace {

// The order of a side-by-side round's blocks, drawn afresh for each case and round.
std::uint64_t block_order_seed(const AttentionCase& attention_case, int round) {
  return splitmix64_finalise(std::hash<std::string>{}(attention_case.id) +
                             static_cast<std::uint64_t>(round) * kSplitMix64Gamma);
}

// Times the case's kernel, `choice`, alone or beside the reference's.
KernelPerformance time_case(const CaseRunner& runner, const KernelChoice& choice,
                            const AttentionCase& attention_case, const AttentionProblem& problem,
                            int round, bool side_by_side) {
  const RunSettings& settings = runner.settings();
  const AttentionInputs inputs =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  if (!side_by_side) {
    return time_kernel(*choice.kernel, problem, inputs, settings.plant, settings.bench);
  }
  if (!settings.reference) {
    throw std::runtime_error("asked to time beside a reference, and this run names none");
  }
  const KernelChoice reference = runner.reference_runner().choose_kernel(attention_case);
  if (reference.kernel == nullptr) throw std::runtime_error(reference.skip_reason);
  return time_side_by_side({choice.kernel, settings.plant},
                           {reference.kernel, settings.reference->plant}, problem, inputs,
                           settings.bench, block_order_seed(attention_case, round));
}

}  // namespace

KernelPerformance CaseRunner::time_round(const AttentionCase& attention_case, int round,
                                         bool side_by_side) const {
  const KernelChoice choice = choose_kernel(attention_case);
  if (choice.kernel == nullptr) throw std::runtime_error(choice.skip_reason);
  return time_case(*this, choice, attention_case, problem_of(attention_case), round, side_by_side);
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

namespace {

// The case on the host path: inputs drawn on the host, the kernel handed copies of them (through
// device memory for a device kernel, run_kernel), the checks and the oracle on the host (the
// cuBLAS oracle for a large dense case of a device kernel).
CaseEvidence run_case_on_host(const AttentionKernel& kernel, const AttentionProblem& problem,
                              const AttentionCase& attention_case, const RunSettings& settings,
                              CaseTiming& timing) {
  CaseEvidence evidence;
  const auto generate_started = std::chrono::steady_clock::now();
  const AttentionInputs inputs =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  timing.generate_seconds = seconds_since(generate_started);
  GuardedOutput output(problem);
  const auto kernel_started = std::chrono::steady_clock::now();
  evidence.first_call = run_kernel(kernel, problem, inputs, settings.plant, output);
  const KernelCall& call = evidence.first_call;
  timing.kernel_seconds = seconds_since(kernel_started);
  timing.transfer_seconds = call.transfer_seconds;
  if (!call.error.empty()) return evidence;

  // The same inputs again, each run into a fresh poisoned output: bitwise the same as the first,
  // or (allow_nondeterminism) kept to be judged against the oracle below.
  std::vector<GuardedOutput> repeats;
  std::optional<std::string>& repeat_fault = evidence.repeat_fault;
  const auto repeats_started = std::chrono::steady_clock::now();
  for (int run = 2; run <= settings.repeats && !repeat_fault; ++run) {
    GuardedOutput& again = repeats.emplace_back(problem);
    const KernelCall call_again = run_kernel(kernel, problem, inputs, settings.plant, again);
    timing.transfer_seconds += call_again.transfer_seconds;
    if (!call_again.error.empty()) {
      repeat_fault = "run " + std::to_string(run) + ": " + call_again.error;
    } else if (call_again.changed_input && !call.changed_input) {
      repeat_fault = "run " + std::to_string(run) + ": " + *call_again.changed_input;
    } else if (std::optional<std::string> stray = again.find_stray_write()) {
      repeat_fault = "run " + std::to_string(run) + ": " + *stray;
    } else if (!settings.allow_nondeterminism) {
      repeat_fault = find_repeat_difference(problem, output.data(), again.data(), run);
      if (!repeat_fault && problem.return_lse) {
        repeat_fault = find_lse_repeat_difference(problem, output.lse(), again.lse(), run);
      }
    }
    // Kept to be judged only when nondeterminism is allowed and the run had no fault of its own.
    if (repeat_fault || !settings.allow_nondeterminism) repeats.pop_back();
  }
  timing.repeat_seconds = seconds_since(repeats_started);

  const auto oracle_started = std::chrono::steady_clock::now();
  const AttentionTensors tensors = input_tensors(inputs);
  const bool on_device = kernel.site() == ExecutionSite::cuda_device;
  // The cuBLAS oracle computes dense attention only: a case with a variant (varlen, paging,
  // windows, soft-capping, ALiBi, the log-sum-exp) is judged on the CPU, and its report says so.
  const bool use_cublas = cublas_reference_supports(problem) &&
                          (settings.oracle == OracleChoice::cuda ||
                           (settings.oracle == OracleChoice::auto_select && on_device &&
                            attention_flops(problem) >= kDeviceOracleMinFlops));
  // Kept from case to case: the oracle overwrites every element, and storage that is already the
  // right size costs neither an allocation nor page faults (its arrays are tens of MiB per case).
  thread_local ReferenceAttention reference;
  evidence.oracle = std::string(use_cublas ? kCudaOracle : kCpuOracle);
  if (use_cublas) {
    try {
      reference = cublas_reference_attention(problem, tensors);
    } catch (const std::exception& error) {
      evidence.oracle_failure = error.what();
      return evidence;
    }
  } else {
    reference_attention(problem, tensors, reference);
  }
  // A declared dequantization's padding of fp8 rows' norms (nothing otherwise), whichever oracle.
  pad_score_scales(problem, tensors, settings.numerics, reference);
  timing.reference_seconds = seconds_since(oracle_started);
  const auto plain_started = std::chrono::steady_clock::now();
  // With the cuBLAS oracle, the plain reference is the device's too: the device path's, so that
  // the two paths judge a case alike (device_plain_attention.h).
  std::vector<float> plain;
  try {
    plain = use_cublas && device_plain_attention_supports(problem, settings.numerics)
                ? device_plain_attention(problem, tensors)
                : plain_attention(problem, tensors, 0, settings.numerics);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& error) {
    evidence.oracle_failure = std::string("plain reference: ") + error.what();
    return evidence;
  }
  timing.plain_seconds = seconds_since(plain_started);
  const auto compare_started = std::chrono::steady_clock::now();
  evidence.comparison = compare_to_reference(problem, reference, plain, output.data(),
                                             settings.numerics, output.lse());
  // A kernel allowed to be nondeterministic is judged on every run: the figures are the worst's.
  for (std::size_t index = 0; index < repeats.size() && !evidence.comparison.failed; ++index) {
    Comparison again = compare_to_reference(problem, reference, plain, repeats[index].data(),
                                            settings.numerics, repeats[index].lse());
    if (again.failed || again.error_ratio > evidence.comparison.error_ratio) {
      if (again.failed) again.reason = "run " + std::to_string(index + 2) + ": " + again.reason;
      evidence.comparison = std::move(again);
    }
  }
  timing.compare_seconds = seconds_since(compare_started);
  timing.oracle_seconds = seconds_since(oracle_started);
  evidence.stray_write = output.find_stray_write();
  return evidence;
}

}  // namespace

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
    result.timing.total_seconds = seconds_since(started);
    result.timestamp = utc_timestamp();
    return result;
  };
  if (choice.kernel == nullptr) {
    result.skip_cause = choice.skip_cause;
    return finish(CaseStatus::skip, choice.skip_reason);
  }

  const AttentionProblem problem = problem_of(attention_case);
  const CaseEvidence evidence =
      runs_whole_on_device(problem, *choice.kernel, settings_)
          ? run_case_on_device(*choice.kernel, problem, attention_case, settings_, result.timing)
          : run_case_on_host(*choice.kernel, problem, attention_case, settings_, result.timing);
  if (!evidence.first_call.error.empty()) {
    return finish(CaseStatus::fail, evidence.first_call.error);
  }
  result.ran = true;
  if (!evidence.oracle_failure.empty()) {
    return finish(CaseStatus::fail,
                  (evidence.oracle == kCudaOracle ? "cuBLAS oracle failed: " : "oracle failed: ") +
                      evidence.oracle_failure);
  }
  result.oracle = evidence.oracle;
  result.comparison = evidence.comparison;

  const std::optional<std::string> faults = joined_faults(
      {failure_of(result.comparison.failed, result.comparison.reason),
       evidence.first_call.changed_input, evidence.stray_write, evidence.repeat_fault});
  if (faults) return finish(CaseStatus::fail, *faults);
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
  // The backward pass, once the forward it differentiates has passed.
  if (attention_case.backward) {
    const auto backward_started = std::chrono::steady_clock::now();
    const BackwardCheck backward =
        check_backward(*choice.kernel, attention_case, settings_.plant, settings_.repeats,
                       settings_.allow_nondeterminism);
    result.timing.backward_seconds = seconds_since(backward_started);
    if (!backward.error.empty()) {
      return finish(CaseStatus::fail,
                    "backward pass: kernel " + choice.name + " failed: " + backward.error);
    }
    result.backward = backward.comparison;
    const std::optional<std::string> backward_faults =
        joined_faults({failure_of(backward.comparison.failed, backward.comparison.reason),
                       backward.changed_input, backward.stray_write, backward.repeat_fault});
    if (backward_faults) {
      return finish(CaseStatus::fail, "backward pass: " + *backward_faults);
    }
    if (backward.comparison.inconclusive) {
      result.skip_cause = SkipCause::inconclusive;
      return finish(CaseStatus::skip, "backward pass: " + backward.comparison.reason);
    }
  }
  // Only a kernel that computed the case right is timed: a wrong kernel's speed means nothing.
  if (!settings_.bench.enabled) return finish(CaseStatus::pass, "");
  // Nor is one beside a reference that did not: it is run on the case first, as the kernel was.
  // One that cannot run the case leaves the kernel timed alone, with nothing to compare.
  std::optional<ReferenceTiming> unavailable_reference;
  bool side_by_side = false;
  if (settings_.reference) {
    // The reference is timed on the forward pass alone: its backward is not its to pass.
    AttentionCase forward_only = attention_case;
    forward_only.backward = false;
    const CaseResult reference = reference_runner().run_unguarded(forward_only);
    if (reference.status == CaseStatus::fail) {
      return finish(
          CaseStatus::fail,
          "the reference kernel " + reference.kernel_name + " (plant " + reference.plant +
              ") failed the case, so nothing can be timed beside it: " + reference.reason);
    }
    side_by_side = reference.status == CaseStatus::pass;
    if (!side_by_side) {
      unavailable_reference.emplace();
      unavailable_reference->kernel = reference.kernel_name;
      unavailable_reference->plant = reference.plant;
      unavailable_reference->unavailable = "it did not run the case: " + reference.reason;
    }
  }
  try {
    result.performance = time_case(*this, choice, attention_case, problem, 1, side_by_side);
    if (unavailable_reference) result.performance->reference = std::move(unavailable_reference);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& error) {
    return finish(CaseStatus::fail, std::string("while timing: ") + error.what());
  }
  return finish(CaseStatus::pass, "");
}

}  // namespace attnfuzz
