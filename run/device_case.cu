// SPDX-License-Identifier: BSD-3-Clause
#include "run/device_case.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <vector>

#include "case/device_inputs.h"
#include "core/clock.h"
#include "core/device_array.h"
#include "core/device_launch.cuh"
#include "oracle/cublas_reference.h"
#include "oracle/device_comparison.h"
#include "oracle/device_plain_attention.h"
#include "run/device_staging.h"
#include "run/guarded_output.h"
#include "run/repeat_difference.h"

namespace attnfuzz {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kNone = -1;

// Enough blocks to fill any GPU several times over; the loops stride over the rest.
constexpr std::int64_t kMaxBlocks = 4096;

unsigned grid_for(std::int64_t work) {
  return blocks_for(work, kThreads, kMaxBlocks);
}

// The first index where a and b differ (b null: where a is not `pattern`), by atomicMin.
__global__ void first_difference(const std::uint16_t* a, const std::uint16_t* b,
                                 std::uint16_t pattern, std::int64_t count,
                                 unsigned long long* first) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (a[i] != (b == nullptr ? pattern : b[i])) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;
    }
  }
}

// The output's elements overwritten with `pattern`: what is left of anything else is a stray write.
__global__ void blank_elements(std::uint16_t* output, std::int64_t batch, std::int64_t seq,
                               std::int64_t heads, std::int64_t dim, TensorStrides strides,
                               std::uint16_t pattern) {
  const std::int64_t count = batch * seq * heads * dim;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t d = i % dim, h = (i / dim) % heads, s = (i / (dim * heads)) % seq,
                       b = i / (dim * heads * seq);
    output[b * strides.batch + s * strides.seq + h * strides.head + d] = pattern;
  }
}

// Device memory kept from case to case.
struct Workspace {
  DeviceInputs generated;
  DeviceBuffer<std::uint16_t> uploaded[3];  // inputs drawn on the host, when the device cannot
  DeviceBuffer<std::uint16_t> handed[3];    // the copies a kernel gets
  std::vector<DeviceBuffer<std::uint16_t>> outputs;  // one per run kept
  DeviceBuffer<std::uint16_t> scratch;
  DeviceBuffer<unsigned long long> first;
  DeviceReference reference;
  DevicePlainAttention plain;
};

// The pristine inputs, wherever they were drawn, and their host copy once one was needed.
struct PristineInputs {
  const std::uint16_t* device[3];
  std::size_t size[3];
  std::optional<AttentionInputs> host;
};

// The first index in [0, count) where a and b differ, or kNone.
std::int64_t find_first_difference(Workspace& work, const std::uint16_t* a, const std::uint16_t* b,
                                   std::uint16_t pattern, std::int64_t count) {
  unsigned long long* first = work.first.reserve(1);
  ATTNFUZZ_CUDA_CHECK(cudaMemset(first, 0xFF, sizeof *first));
  if (count > 0) first_difference<<<grid_for(count), kThreads>>>(a, b, pattern, count, first);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  unsigned long long index = 0;
  ATTNFUZZ_CUDA_CHECK(cudaMemcpy(&index, first, sizeof index, cudaMemcpyDeviceToHost));
  return index == ~0ull ? kNone : static_cast<std::int64_t>(index);
}

std::vector<std::uint16_t> to_host(const std::uint16_t* device, std::size_t count) {
  std::vector<std::uint16_t> host(count);
  if (count > 0) {
    ATTNFUZZ_CUDA_CHECK(
        cudaMemcpy(host.data(), device, count * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
  }
  return host;
}

AttentionInputs& host_inputs(PristineInputs& pristine) {
  if (!pristine.host) {
    pristine.host.emplace();
    pristine.host->q = to_host(pristine.device[0], pristine.size[0]);
    pristine.host->k = to_host(pristine.device[1], pristine.size[1]);
    pristine.host->v = to_host(pristine.device[2], pristine.size[2]);
  }
  return *pristine.host;
}

// The case's inputs on the device: drawn there, or drawn on the host and copied.
PristineInputs draw_inputs(Workspace& work, const AttentionProblem& problem,
                           const AttentionCase& attention_case, CaseTiming& timing) {
  PristineInputs pristine;
  const auto started = std::chrono::steady_clock::now();
  if (generate_inputs_on_device(problem, attention_case.data, attention_case.seed,
                                attention_case.injection, work.generated)) {
    for (int t = 0; t < 3; ++t) {
      pristine.device[t] = work.generated.data(static_cast<TensorRole>(t));
      pristine.size[t] = work.generated.size(static_cast<TensorRole>(t));
    }
    timing.generate_seconds = seconds_since(started);
    return pristine;
  }
  // Drawn on the host and copied over: both count as drawing the inputs onto the device.
  pristine.host =
      generate_inputs(problem, attention_case.data, attention_case.seed, attention_case.injection);
  const std::vector<std::uint16_t>* tensors[] = {&pristine.host->q, &pristine.host->k,
                                                 &pristine.host->v};
  for (int t = 0; t < 3; ++t) {
    std::uint16_t* device = work.uploaded[t].reserve(static_cast<std::int64_t>(tensors[t]->size()));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(device, tensors[t]->data(),
                                   tensors[t]->size() * sizeof(std::uint16_t),
                                   cudaMemcpyHostToDevice));
    pristine.device[t] = device;
    pristine.size[t] = tensors[t]->size();
  }
  timing.generate_seconds = seconds_since(started);
  return pristine;
}

// Output buffers as the host's GuardedOutput lays them out ([guard][span][guard]), with a tile of
// rows of unchecked slack after them, as run_kernel_on_device gives a kernel.
struct OutputLayout {
  std::int64_t checked;  // guard, span and trailing guard: what must hold poison but elements
  std::int64_t total;    // with the slack
};

OutputLayout output_layout(const AttentionProblem& problem) {
  const std::int64_t checked = GuardedOutput::kGuardElements + o_span(problem) +
                               GuardedOutput::trailing_guard_elements(problem);
  return {checked, checked + 64 * problem.o_strides.seq};
}

// One run of the kernel: fresh copies of the inputs, a poisoned output, the call; then the inputs
// and the output's surroundings checked.
struct RunFindings {
  KernelCall call;
  std::optional<std::string> stray_write;
};

RunFindings run_once(Workspace& work, const AttentionKernel& kernel,
                     const AttentionProblem& problem, PlantedBug plant, PristineInputs& pristine,
                     std::uint16_t* output) {
  RunFindings findings;
  const std::uint16_t poison = traits_of(problem.dtype).poison_bits;
  const OutputLayout layout = output_layout(problem);
  std::uint16_t* handed[3];
  for (int t = 0; t < 3; ++t) {
    handed[t] = work.handed[t].reserve(static_cast<std::int64_t>(pristine.size[t]));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(handed[t], pristine.device[t],
                                   pristine.size[t] * sizeof(std::uint16_t),
                                   cudaMemcpyDeviceToDevice));
  }
  fill_pattern<<<grid_for(layout.total), kThreads>>>(output, layout.total, poison);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  try {
    kernel.forward(
        problem, {handed[0], handed[1], handed[2], output + GuardedOutput::kGuardElements}, plant);
    ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& error) {
    findings.call.error = "kernel " + std::string(kernel.name()) + " failed: " + error.what();
    note_device_failure(findings.call.error);
    return findings;
  }
  // The inputs: bitwise as they were, else the host describes the first change.
  for (int t = 0; t < 3 && !findings.call.changed_input; ++t) {
    const auto size = static_cast<std::int64_t>(pristine.size[t]);
    if (find_first_difference(work, handed[t], pristine.device[t], 0, size) == kNone) continue;
    const auto copy_started = std::chrono::steady_clock::now();
    const AttentionInputs& original = host_inputs(pristine);
    KernelInputs copies = KernelInputs::copy_of(problem, original);
    std::uint16_t* host_copies[] = {copies.q.data(), copies.k.data(), copies.v.data()};
    for (int u = 0; u < 3; ++u) {
      ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_copies[u], handed[u],
                                     pristine.size[u] * sizeof(std::uint16_t),
                                     cudaMemcpyDeviceToHost));
    }
    findings.call.changed_input = find_changed_input(problem, original, copies);
    findings.call.transfer_seconds += seconds_since(copy_started);
  }
  // The output's guards and padding: poison, once the elements are blanked out.
  std::uint16_t* scratch = work.scratch.reserve(layout.checked);
  ATTNFUZZ_CUDA_CHECK(cudaMemcpy(scratch, output, layout.checked * sizeof(std::uint16_t),
                                 cudaMemcpyDeviceToDevice));
  blank_elements<<<grid_for(problem.batch * problem.seq_len_q * problem.heads * problem.head_dim),
                   kThreads>>>(scratch + GuardedOutput::kGuardElements, problem.batch,
                               problem.seq_len_q, problem.heads, problem.head_dim,
                               problem.o_strides, poison);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  if (find_first_difference(work, scratch, nullptr, poison, layout.checked) != kNone) {
    GuardedOutput host_output(problem);
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_output.buffer().data(), output,
                                   layout.checked * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
    findings.stray_write = host_output.find_stray_write();
  }
  return findings;
}

// The first differing element of two runs' outputs, described by the host's code.
std::optional<std::string> repeat_difference(Workspace& work, const AttentionProblem& problem,
                                             const std::uint16_t* first, const std::uint16_t* again,
                                             int run) {
  const OutputLayout layout = output_layout(problem);
  if (find_first_difference(work, first, again, 0, layout.checked) == kNone) return std::nullopt;
  const std::vector<std::uint16_t> first_host = to_host(first, layout.checked);
  const std::vector<std::uint16_t> again_host = to_host(again, layout.checked);
  return find_repeat_difference(problem, first_host.data() + GuardedOutput::kGuardElements,
                                again_host.data() + GuardedOutput::kGuardElements, run);
}

}  // namespace

bool runs_whole_on_device(const AttentionProblem& problem, const AttentionKernel& kernel,
                          const RunSettings& settings) {
  return kernel.site() == ExecutionSite::cuda_device && !settings.host_verification &&
         settings.oracle != OracleChoice::cpu && cublas_reference_supports(problem) &&
         device_comparison_supports(problem) &&
         device_plain_attention_supports(problem, settings.numerics) &&
         !settings.numerics.accumulation_declared();
}

namespace {

// The case as run_case_on_device runs it; a CUDA or cuBLAS error throws.
CaseEvidence run_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                           const AttentionCase& attention_case, const RunSettings& settings,
                           CaseTiming& timing) {
  thread_local Workspace work;
  CaseEvidence evidence;
  PristineInputs pristine = draw_inputs(work, problem, attention_case, timing);
  const OutputLayout layout = output_layout(problem);
  const int runs = std::max(settings.repeats, 1);
  if (work.outputs.size() < 2) work.outputs.resize(2);

  const auto kernel_started = std::chrono::steady_clock::now();
  std::uint16_t* output = work.outputs[0].reserve(layout.total);
  RunFindings first = run_once(work, kernel, problem, settings.plant, pristine, output);
  timing.kernel_seconds = seconds_since(kernel_started);
  timing.transfer_seconds += first.call.transfer_seconds;
  evidence.first_call = first.call;
  evidence.stray_write = first.stray_write;
  if (!first.call.error.empty()) return evidence;

  // The same inputs again, each run into a fresh poisoned output: bitwise the same as the first,
  // or (allow_nondeterminism) kept to be judged against the oracle below.
  std::vector<const std::uint16_t*> kept{output};
  const auto repeats_started = std::chrono::steady_clock::now();
  for (int run = 2; run <= runs && !evidence.repeat_fault; ++run) {
    const std::size_t slot = settings.allow_nondeterminism ? kept.size() : 1;
    if (work.outputs.size() <= slot) work.outputs.resize(slot + 1);
    std::uint16_t* again = work.outputs[slot].reserve(layout.total);
    const RunFindings repeat = run_once(work, kernel, problem, settings.plant, pristine, again);
    timing.transfer_seconds += repeat.call.transfer_seconds;
    const std::string numbered = "run " + std::to_string(run) + ": ";
    if (!repeat.call.error.empty()) {
      evidence.repeat_fault = numbered + repeat.call.error;
    } else if (repeat.call.changed_input && !first.call.changed_input) {
      evidence.repeat_fault = numbered + *repeat.call.changed_input;
    } else if (repeat.stray_write) {
      evidence.repeat_fault = numbered + *repeat.stray_write;
    } else if (!settings.allow_nondeterminism) {
      evidence.repeat_fault = repeat_difference(work, problem, output, again, run);
    } else {
      kept.push_back(again);
    }
  }
  timing.repeat_seconds = seconds_since(repeats_started);

  const auto oracle_started = std::chrono::steady_clock::now();
  const DeviceInputTensors inputs{pristine.device[0], pristine.device[1], pristine.device[2]};
  evidence.oracle = std::string(kCudaOracle);
  try {
    cublas_reference_on_device(problem, inputs, work.reference);
    ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
    timing.reference_seconds = seconds_since(oracle_started);
    const auto plain_started = std::chrono::steady_clock::now();
    device_plain_attention(problem, inputs, work.plain);
    ATTNFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
    timing.plain_seconds = seconds_since(plain_started);
  } catch (const std::exception& error) {
    evidence.oracle_failure = error.what();
    return evidence;
  }
  const auto compare_started = std::chrono::steady_clock::now();
  for (std::size_t index = 0; index < kept.size(); ++index) {
    Comparison comparison = compare_rows_on_device(
        problem, work.reference.view(), kept[index] + GuardedOutput::kGuardElements,
        work.plain.output.get(), work.reference.max_abs_output, settings.numerics);
    // A kernel allowed to be nondeterministic is judged on every run: the figures are the worst's.
    if (index == 0) {
      evidence.comparison = std::move(comparison);
    } else if (comparison.failed || comparison.error_ratio > evidence.comparison.error_ratio) {
      if (comparison.failed) {
        comparison.reason = "run " + std::to_string(index + 1) + ": " + comparison.reason;
      }
      evidence.comparison = std::move(comparison);
    }
    if (evidence.comparison.failed) break;
  }
  timing.compare_seconds = seconds_since(compare_started);
  timing.oracle_seconds = seconds_since(oracle_started);
  return evidence;
}

}  // namespace

CaseEvidence run_case_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                                const AttentionCase& attention_case, const RunSettings& settings,
                                CaseTiming& timing) {
  try {
    return run_on_device(kernel, problem, attention_case, settings, timing);
  } catch (const std::bad_alloc&) {
    throw;  // the host ran out of memory: the case is skipped (CaseRunner::run)
  } catch (const std::exception& error) {
    // The harness's own device work failed (out of device memory, a lost context): the case fails
    // saying so, and a context that cannot go on is recorded for the cases after it.
    CaseEvidence evidence;
    evidence.first_call.error =
        "device work for kernel " + std::string(kernel.name()) + " failed: " + error.what();
    note_device_failure(evidence.first_call.error);
    return evidence;
  }
}

}  // namespace attnfuzz
