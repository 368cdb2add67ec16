// SPDX-License-Identifier: BSD-3-Clause
#include "run/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/number_text.h"
#include "core/splitmix.h"
#include "perf/machine_state.h"
#include "run/device_staging.h"
#include "run/guarded_output.h"
#include "run/kernel_inputs.h"

#if ATTNFUZZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/device_array.h"
#endif

namespace attnfuzz {
namespace {

// A check of the stopping rule costs a sort of the samples: checking each time the count has grown
// by a quarter keeps that cost a small fraction of the kernel calls'.
constexpr double kCheckGrowth = 1.25;

// Side by side, a round is this many pairs of blocks: short blocks alternate the two kernels many
// times a second, so that a drift of the machine (seconds long, perf/timing_statistics.h) falls
// within a pair and cancels in its ratio.
constexpr int kBlocksPerRound = 8;

// One kernel, or two side by side, called again and again on one case: `call` runs `side`'s kernel
// once and returns its milliseconds; `fault` says what the calls since the last look did that they
// must not (an input changed, a write outside the output), or nothing.
struct TimedCalls {
  std::function<double(int side)> call;
  std::function<std::optional<std::string>()> fault;
};

void throw_on_fault(const TimedCalls& calls, const std::string& who) {
  if (const std::optional<std::string> fault = calls.fault()) {
    throw std::runtime_error("while timed, " + who + *fault);
  }
}

// The warm-up's calls and their milliseconds.
struct WarmUp {
  int calls = 0;
  double milliseconds = 0;
};

// Calls `call` until the BenchSettings' warm-up has both its calls and its seconds.
WarmUp warm_up(const BenchSettings& settings, const std::function<double()>& call) {
  WarmUp warm;
  const auto started = std::chrono::steady_clock::now();
  while (warm.calls < settings.min_warmup_runs ||
         seconds_since(started) < settings.warmup_seconds) {
    warm.milliseconds += call();
    ++warm.calls;
  }
  return warm;
}

// Warms up, then calls side 0 until the BenchSettings' stopping rule says enough. Fills the
// samples, warm-up count and stopping reason of `performance`.
void measure(const BenchSettings& settings, const TimedCalls& calls,
             KernelPerformance& performance) {
  performance.warmup_runs += warm_up(settings, [&] { return calls.call(0); }).calls;
  const auto started = std::chrono::steady_clock::now();
  const double seconds_per_round = settings.seconds_per_case / std::max(settings.rounds, 1);
  std::vector<double>& samples = performance.rounds_ms.emplace_back();
  std::size_t next_check = static_cast<std::size_t>(settings.min_repetitions);
  std::vector<double> sorted;
  for (;;) {
    samples.push_back(calls.call(0));
    if (samples.size() >= static_cast<std::size_t>(settings.max_repetitions)) {
      performance.stopped_because = "max_repetitions";
      break;
    }
    if (seconds_since(started) >= seconds_per_round &&
        samples.size() >= static_cast<std::size_t>(std::min(settings.min_repetitions, 3))) {
      performance.stopped_because = "time_budget";
      break;
    }
    if (samples.size() >= next_check) {
      sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      const auto [low, high] = median_order_interval(sorted);
      const double median = percentile(sorted, 0.5);
      if (median > 0 && (high - low) / median <= settings.target_ci_width) {
        performance.stopped_because = "ci_width";
        break;
      }
      next_check = static_cast<std::size_t>(static_cast<double>(samples.size()) * kCheckGrowth) + 1;
    }
  }
  // The timed calls are held to what the checked call was: inputs left as they were.
  throw_on_fault(calls, "");
}

// Side by side: both sides warmed up, then kBlocksPerRound pairs of blocks, each pair the two
// sides back to back in an order drawn from `order_seed`, each block as many calls on both sides
// (the round's time at the slower side's pace). Side 0 is the candidate (`performance`), side 1
// the reference (`reference`). Each block is checked for faults as it ends, so that a fault is
// blamed on the kernel that made it. Blocks do not stop at the interval's width: equal blocks
// expose both sides to the machine alike.
void measure_side_by_side(const BenchSettings& settings, std::uint64_t order_seed,
                          const TimedCalls& calls, const std::string (&names)[2],
                          KernelPerformance& performance, ReferenceTiming& reference) {
  // A call that fails names its kernel: the candidate's or the reference's.
  const auto call = [&](int side) {
    try {
      return calls.call(side);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& error) {
      throw std::runtime_error(names[side] + error.what());
    }
  };
  WarmUp warm[2];
  for (int side = 0; side < 2; ++side) {
    warm[side] = warm_up(settings, [&] { return call(side); });
    throw_on_fault(calls, names[side]);
  }
  performance.warmup_runs += warm[0].calls;
  const double slower_call_ms =
      std::max(warm[0].milliseconds / warm[0].calls, warm[1].milliseconds / warm[1].calls);
  const double round_ms = 1e3 * settings.seconds_per_case / std::max(settings.rounds, 1);
  const double fitting = round_ms / (2.0 * kBlocksPerRound * std::max(slower_call_ms, 1e-6));
  const int per_block = static_cast<int>(
      std::clamp(fitting, 1.0,
                 std::max(1.0, static_cast<double>(settings.max_repetitions) / kBlocksPerRound)));
  TimingRounds* blocks[2] = {&performance.rounds_ms, &reference.rounds_ms};
  // Each order as often: pairs come two by two, the first's order drawn, the second's the other.
  std::uint64_t state = order_seed;
  int first = 0;
  for (int block = 0; block < kBlocksPerRound; ++block) {
    if (block % 2 == 0) {
      state += kSplitMix64Gamma;
      first = static_cast<int>(splitmix64_finalise(state) & 1);
    } else {
      first = 1 - first;
    }
    for (const int side : {first, 1 - first}) {
      std::vector<double>& samples = blocks[side]->emplace_back();
      for (int repetition = 0; repetition < per_block; ++repetition) {
        samples.push_back(call(side));
      }
      throw_on_fault(calls, names[side]);
    }
  }
  performance.stopped_because = "side_by_side_blocks";
}

// The calls of `kernels` (one, or the candidate and the reference) on one set of inputs and one
// output: each call is handed the same copies (run/kernel_inputs.h; the originals stay the
// harness's), so that neither side is favoured by where its buffers lie.
class HostCalls {
 public:
  HostCalls(const AttentionProblem& problem, const AttentionInputs& inputs,
            std::vector<TimedKernel> kernels)
      : problem_(problem),
        inputs_(inputs),
        kernels_(std::move(kernels)),
        output_(problem),
        handed_(KernelInputs::copy_of(problem, inputs)),
        tensors_(handed_.bind(output_.data(), output_.lse())) {}

  TimedCalls calls() {
    return {[this](int side) {
              const auto started = std::chrono::steady_clock::now();
              kernels_[side].kernel->forward(problem_, tensors_, kernels_[side].plant);
              return seconds_since(started) * 1e3;
            },
            [this]() -> std::optional<std::string> {
              if (auto changed = find_changed_input(problem_, inputs_, handed_)) return changed;
              if (auto stray = output_.find_stray_write()) return "a " + *stray;
              return std::nullopt;
            }};
  }

 private:
  const AttentionProblem& problem_;
  const AttentionInputs& inputs_;
  std::vector<TimedKernel> kernels_;
  GuardedOutput output_;
  // Not const: a kernel may write through the pointers it is handed.
  KernelInputs handed_;
  AttentionTensors tensors_;
};

// Runs `measure_calls` on a thread of its own: its stack is freshly mapped, page-aligned, so where
// the kernel's stack variables fall does not depend on how long this process's command line and
// environment are (the main thread's stack starts below them). Measured: cpu_flash ran 10% faster
// or slower by the length of the worker's argv alone, which a baseline run and a later run with
// --baseline differ in.
void on_fresh_thread(const std::function<void()>& measure_calls) {
  std::exception_ptr failure;
  std::thread timer([&] {
    try {
      measure_calls();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  timer.join();
  if (failure) std::rethrow_exception(failure);
}

#if ATTNFUZZ_HAVE_CUDA

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// CUDA events that destroy themselves.
class CudaEvent {
 public:
  CudaEvent() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

// The device's twin of HostCalls: one set of device inputs and one output for every kernel, the
// L2 cache overwritten before each call (twice its size: what the previous call left there is
// evicted, as a kernel's first call in a real model finds it), each call timed by CUDA events.
class DeviceCalls {
 public:
  DeviceCalls(const AttentionProblem& problem, const AttentionInputs& inputs,
              std::vector<TimedKernel> kernels)
      : problem_(problem),
        inputs_(inputs),
        kernels_(std::move(kernels)),
        q_(inputs.q.size()),
        k_(inputs.k.size()),
        v_(inputs.v.size()),
        output_(problem),
        o_(output_.buffer().size()),
        index_arrays_(problem, &inputs),
        lse_(std::max<std::size_t>(output_.lse_buffer().size(), 1)) {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    char bus_id[32] = {};
    check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
    bus_id_ = bus_id;
    check(cudaGetDeviceProperties(&properties_, device), "cudaGetDeviceProperties");
    q_.copy_from_host(inputs.q.data(), inputs.q.size());
    k_.copy_from_host(inputs.k.data(), inputs.k.size());
    v_.copy_from_host(inputs.v.data(), inputs.v.size());
    tensors_ = index_arrays_.bind(
        {q_.get(), k_.get(), v_.get(), o_.get() + GuardedOutput::kGuardElements});
    if (problem.return_lse) tensors_.lse = lse_.get() + GuardedOutput::kGuardElements;
    flush_bytes_ = 2 * static_cast<std::size_t>(std::max(properties_.l2CacheSize, 1));
    flush_.emplace(flush_bytes_);
  }

  const std::string& bus_id() const { return bus_id_; }
  const cudaDeviceProp& properties() const { return properties_; }

  TimedCalls calls() {
    return {[this](int side) {
              check(cudaMemsetAsync(flush_->get(), ++call_ & 0xff, flush_bytes_),
                    "flushing the L2 cache");
              check(cudaEventRecord(start_.get()), "cudaEventRecord");
              kernels_[side].kernel->forward(problem_, tensors_, kernels_[side].plant);
              check(cudaEventRecord(stop_.get()), "cudaEventRecord");
              check(cudaEventSynchronize(stop_.get()), "the timed kernel call");
              float milliseconds = 0;
              check(cudaEventElapsedTime(&milliseconds, start_.get(), stop_.get()),
                    "cudaEventElapsedTime");
              return static_cast<double>(milliseconds);
            },
            [this]() {
              return find_changed_device_input(problem_, inputs_, q_, k_, v_, index_arrays_);
            }};
  }

 private:
  const AttentionProblem& problem_;
  const AttentionInputs& inputs_;
  std::vector<TimedKernel> kernels_;
  std::string bus_id_;
  cudaDeviceProp properties_{};
  DeviceArray<std::uint16_t> q_, k_, v_;
  GuardedOutput output_;
  DeviceArray<std::uint16_t> o_;
  DeviceIndexArrays index_arrays_;
  DeviceArray<float> lse_;
  AttentionTensors tensors_{};
  std::size_t flush_bytes_ = 0;
  std::optional<DeviceArray<unsigned char>> flush_;
  CudaEvent start_, stop_;
  int call_ = 0;
};

// `measure_calls` on the device, with the GPU's NVML readings around it, its suspicion and its
// roofline peaks in `performance`.
void time_on_device(DeviceCalls& device, KernelPerformance& performance,
                    const std::function<void(const TimedCalls&)>& measure_calls) {
  performance.clock = "cuda_events";
  performance.l2_flushed = true;
  const GpuState before = read_gpu_state(device.bus_id());
  measure_calls(device.calls());
  const GpuState after = read_gpu_state(device.bus_id());
  performance.machine_before = gpu_state_to_json(before);
  performance.machine_after = gpu_state_to_json(after);
  if (const std::optional<std::string> suspect = gpu_timing_suspect(before, after)) {
    performance.suspect = *suspect;
  }
  // The GPU's peaks; the summary takes the fraction reached at the median.
  if (const std::optional<GpuPeak> peak = known_gpu_peak(device.properties().name)) {
    performance.roofline = roofline_verdict(*peak, 0, 0, 0);
  }
}

#endif

std::string site_name(ExecutionSite site) {
  return site == ExecutionSite::host ? "the host" : "a CUDA device";
}

// Times `kernels` (one, or the candidate and the reference) on the case where they run: the
// host's calls on a fresh thread (with the other work on the machine meanwhile) or the device's
// (with the GPU's readings), measured by `measure_calls`; then the work done and the summary.
KernelPerformance time_calls(
    std::vector<TimedKernel> kernels, const AttentionProblem& problem,
    const AttentionInputs& inputs,
    const std::function<void(const TimedCalls&, KernelPerformance&)>& measure_calls) {
  const AttentionKernel& first = *kernels.front().kernel;
  KernelPerformance performance;
  if (first.site() == ExecutionSite::host) {
    performance.clock = "steady_clock";
    HostCalls host(problem, inputs, std::move(kernels));
    const CpuTimes before = read_cpu_times();
    on_fresh_thread([&] { measure_calls(host.calls(), performance); });
    performance.other_work_cores = other_work_cores(before, read_cpu_times());
    if (performance.other_work_cores > kSuspectOtherWorkCores) {
      performance.suspect = "other work kept " +
                            significant_digits(performance.other_work_cores, 2) +
                            " cores busy while it was timed";
    }
  } else {
#if ATTNFUZZ_HAVE_CUDA
    try {
      DeviceCalls device(problem, inputs, std::move(kernels));
      time_on_device(device, performance,
                     [&](const TimedCalls& calls) { measure_calls(calls, performance); });
    } catch (const std::exception& error) {
      // A fault that leaves the context unusable ends this worker's CUDA work here, so that the
      // next case is not blamed for it (as after a fault in the correctness run).
      note_device_failure(std::string("while timing ") + std::string(first.name()) + ": " +
                          error.what());
      throw;
    }
#else
    throw std::runtime_error("kernel " + std::string(first.name()) +
                             " runs on a CUDA device, and this build has no CUDA support");
#endif
  }
  performance.flops = bench_flops(problem);
  performance.bytes = bench_bytes(problem);
  summarize_performance(performance);
  return performance;
}

}  // namespace

double bench_flops(const AttentionProblem& problem) {
  return attention_flops(problem) * (problem.causal ? 0.5 : 1.0);
}

double bench_bytes(const AttentionProblem& problem) {
  const double query_elements =
      static_cast<double>(problem.batch) * problem.heads * problem.seq_len_q * problem.head_dim;
  const double key_elements =
      static_cast<double>(problem.batch) * problem.kv_heads * problem.seq_len_k * problem.head_dim;
  const double element_bytes = 2;  // fp16 and bf16
  return element_bytes * (2 * query_elements + 2 * key_elements);
}

KernelPerformance time_kernel(const AttentionKernel& kernel, const AttentionProblem& problem,
                              const AttentionInputs& inputs, PlantedBug plant,
                              const BenchSettings& settings) {
  return time_calls({{&kernel, plant}}, problem, inputs,
                    [&](const TimedCalls& calls, KernelPerformance& performance) {
                      measure(settings, calls, performance);
                    });
}

KernelPerformance time_side_by_side(const TimedKernel& candidate, const TimedKernel& reference,
                                    const AttentionProblem& problem, const AttentionInputs& inputs,
                                    const BenchSettings& settings, std::uint64_t order_seed) {
  if (candidate.kernel->site() != reference.kernel->site()) {
    throw std::runtime_error("the reference kernel " + std::string(reference.kernel->name()) +
                             " runs on " + site_name(reference.kernel->site()) + ", " +
                             std::string(candidate.kernel->name()) + " on " +
                             site_name(candidate.kernel->site()) +
                             ": side by side, both run where the other does");
  }
  ReferenceTiming reference_timing;
  reference_timing.kernel = std::string(reference.kernel->name());
  reference_timing.plant = std::string(planted_bug_name(reference.plant));
  const std::string names[2] = {"the kernel " + std::string(candidate.kernel->name()) + ": ",
                                "the reference kernel " + reference_timing.kernel + ": "};
  KernelPerformance performance = time_calls(
      {candidate, reference}, problem, inputs,
      [&](const TimedCalls& calls, KernelPerformance& timed) {
        measure_side_by_side(settings, order_seed, calls, names, timed, reference_timing);
      });
  performance.reference = std::move(reference_timing);
  summarize_performance(performance);
  return performance;
}

}  // namespace attnfuzz
