// SPDX-License-Identifier: BSD-3-Clause
#include "run/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
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

// Warms up, then calls `timed_call` (which runs the kernel once and returns its milliseconds)
// until the BenchSettings' stopping rule says enough. Fills the samples, warm-up count and
// stopping reason of `performance`.
void measure(const BenchSettings& settings, const std::function<double()>& timed_call,
             KernelPerformance& performance) {
  const auto warmup_started = std::chrono::steady_clock::now();
  while (performance.warmup_runs < settings.min_warmup_runs ||
         seconds_since(warmup_started) < settings.warmup_seconds) {
    timed_call();
    ++performance.warmup_runs;
  }
  const auto started = std::chrono::steady_clock::now();
  const double seconds_per_round = settings.seconds_per_case / std::max(settings.rounds, 1);
  std::vector<double>& samples = performance.rounds_ms.emplace_back();
  std::size_t next_check = static_cast<std::size_t>(settings.min_repetitions);
  std::vector<double> sorted;
  for (;;) {
    samples.push_back(timed_call());
    if (samples.size() >= static_cast<std::size_t>(settings.max_repetitions)) {
      performance.stopped_because = "max_repetitions";
      return;
    }
    if (seconds_since(started) >= seconds_per_round &&
        samples.size() >= static_cast<std::size_t>(std::min(settings.min_repetitions, 3))) {
      performance.stopped_because = "time_budget";
      return;
    }
    if (samples.size() >= next_check) {
      sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      const auto [low, high] = median_order_interval(sorted);
      const double median = percentile(sorted, 0.5);
      if (median > 0 && (high - low) / median <= settings.target_ci_width) {
        performance.stopped_because = "ci_width";
        return;
      }
      next_check = static_cast<std::size_t>(static_cast<double>(samples.size()) * kCheckGrowth) + 1;
    }
  }
}

KernelPerformance time_on_host(const AttentionKernel& kernel, const AttentionProblem& problem,
                               const AttentionInputs& inputs, PlantedBug plant,
                               const BenchSettings& settings) {
  KernelPerformance performance;
  performance.clock = "steady_clock";
  GuardedOutput output(problem);
  // Copies, as every call is handed (run/kernel_inputs.h): the originals stay the harness's
  // (not const: a kernel may write through the pointers it is handed).
  KernelInputs handed = KernelInputs::copy_of(problem, inputs);
  const AttentionTensors tensors = handed.bind(output.data(), output.lse());
  // The calls run on a thread of their own: its stack is freshly mapped, page-aligned, so where
  // the kernel's stack variables fall does not depend on how long this process's command line and
  // environment are (the main thread's stack starts below them). Measured: cpu_flash ran 10%
  // faster or slower by the length of the worker's argv alone, which a baseline run and a later
  // run with --baseline differ in.
  std::exception_ptr failure;
  std::thread timer([&] {
    try {
      measure(
          settings,
          [&] {
            const auto started = std::chrono::steady_clock::now();
            kernel.forward(problem, tensors, plant);
            return seconds_since(started) * 1e3;
          },
          performance);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  timer.join();
  if (failure) std::rethrow_exception(failure);
  // The timed calls are held to what the checked call was: inputs left as they were.
  if (const std::optional<std::string> changed = find_changed_input(problem, inputs, handed)) {
    throw std::runtime_error("while timed, " + *changed);
  }
  if (const std::optional<std::string> stray = output.find_stray_write()) {
    throw std::runtime_error("while timed, a " + *stray);
  }
  return performance;
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

KernelPerformance time_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                                 const AttentionInputs& inputs, PlantedBug plant,
                                 const BenchSettings& settings) {
  KernelPerformance performance;
  performance.clock = "cuda_events";
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  char bus_id[32] = {};
  check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");

  DeviceArray<std::uint16_t> q(inputs.q.size()), k(inputs.k.size()), v(inputs.v.size());
  q.copy_from_host(inputs.q.data(), inputs.q.size());
  k.copy_from_host(inputs.k.data(), inputs.k.size());
  v.copy_from_host(inputs.v.data(), inputs.v.size());
  GuardedOutput output(problem);
  DeviceArray<std::uint16_t> o(output.buffer().size());
  const DeviceIndexArrays index_arrays(problem);
  DeviceArray<float> lse(std::max<std::size_t>(output.lse_buffer().size(), 1));
  AttentionTensors tensors =
      index_arrays.bind({q.get(), k.get(), v.get(), o.get() + GuardedOutput::kGuardElements});
  if (problem.return_lse) tensors.lse = lse.get() + GuardedOutput::kGuardElements;
  // Twice the L2 cache, written before each call: what the previous call left there is evicted.
  const std::size_t flush_bytes = 2 * static_cast<std::size_t>(std::max(properties.l2CacheSize, 1));
  DeviceArray<unsigned char> flush(flush_bytes);
  performance.l2_flushed = true;
  CudaEvent start, stop;
  int call = 0;

  const GpuState before = read_gpu_state(bus_id);
  measure(
      settings,
      [&] {
        check(cudaMemsetAsync(flush.get(), ++call & 0xff, flush_bytes), "flushing the L2 cache");
        check(cudaEventRecord(start.get()), "cudaEventRecord");
        kernel.forward(problem, tensors, plant);
        check(cudaEventRecord(stop.get()), "cudaEventRecord");
        check(cudaEventSynchronize(stop.get()), "the timed kernel call");
        float milliseconds = 0;
        check(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "cudaEventElapsedTime");
        return static_cast<double>(milliseconds);
      },
      performance);
  const GpuState after = read_gpu_state(bus_id);
  if (const std::optional<std::string> changed =
          find_changed_device_input(problem, inputs, q, k, v, index_arrays)) {
    throw std::runtime_error("while timed, " + *changed);
  }
  performance.machine_before = gpu_state_to_json(before);
  performance.machine_after = gpu_state_to_json(after);
  if (const std::optional<std::string> suspect = gpu_timing_suspect(before, after)) {
    performance.suspect = *suspect;
  }
  // The GPU's peaks; time_kernel's summary takes the fraction reached at the median.
  if (const std::optional<GpuPeak> peak = known_gpu_peak(properties.name)) {
    performance.roofline = roofline_verdict(*peak, 0, 0, 0);
  }
  return performance;
}

#endif

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
  KernelPerformance performance;
  if (kernel.site() == ExecutionSite::host) {
    performance = time_on_host(kernel, problem, inputs, plant, settings);
  } else {
#if ATTNFUZZ_HAVE_CUDA
    try {
      performance = time_on_device(kernel, problem, inputs, plant, settings);
    } catch (const std::exception& error) {
      // A fault that leaves the context unusable ends this worker's CUDA work here, so that the
      // next case is not blamed for it (as after a fault in the correctness run).
      note_device_failure(std::string("while timing ") + std::string(kernel.name()) + ": " +
                          error.what());
      throw;
    }
#else
    throw std::runtime_error("kernel " + std::string(kernel.name()) +
                             " runs on a CUDA device, and this build has no CUDA support");
#endif
  }
  performance.flops = bench_flops(problem);
  performance.bytes = bench_bytes(problem);
  summarize_performance(performance);
  return performance;
}

}  // namespace attnfuzz
