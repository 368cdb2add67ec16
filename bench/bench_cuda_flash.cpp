// SPDX-License-Identifier: BSD-3-Clause
// The speed of cuda_flash on the GPU, in TFLOP/s, on FlashAttention's benchmark shapes: a model
// width of 2048 (heads = 2048 / head_dim) and 16384 tokens per batch (batch = 16384 / seq_len),
// fp16, BSHD, causal and not. Each figure is the median of --runs timed calls (CUDA events around
// the kernel's forward call) after --warmup untimed ones. Causal FLOPs count the visible half.
// Before timing, each shape is checked against the float64 oracle on a slice of itself:
// a fast wrong kernel is worth nothing. scripts/bench_sdpa.py prints PyTorch's figures for the
// same shapes, and scripts/gpu_validate.sh runs both in one go.
//
//   bench_cuda_flash [--runs 30] [--warmup 5] [--kernel cuda_flash]
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "case/data_distribution.h"
#include "core/cuda_check.h"
#include "core/device_array.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "run/case_runner.h"

namespace attnfuzz {
namespace {

constexpr std::int64_t kModelWidth = 2048;
constexpr std::int64_t kTokens = 16384;

// The correctness gate: one batch of two heads of the shape through the ordinary case runner
// (the oracle's cost stays small; heads and batches are only grid dimensions to the kernel).
bool slice_passes(const std::string& kernel, const AttentionCase& shape) {
  AttentionCase one = shape;
  one.batch = 1;
  one.heads = one.kv_heads = 2;
  RunSettings settings;
  settings.backend = Backend::cuda;
  settings.kernel = kernel;
  const CaseResult result = CaseRunner(settings).run(one);
  if (result.status != CaseStatus::pass) {
    std::printf("  %s: %s\n", std::string(case_status_name(result.status)).c_str(),
                result.reason.c_str());
  }
  return result.status == CaseStatus::pass;
}

double median_milliseconds(const AttentionKernel& kernel, const AttentionProblem& problem,
                           const AttentionTensors& tensors, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) kernel.forward(problem, tensors, PlantedBug::none);
  cudaEvent_t start, stop;
  ATTNFUZZ_CUDA_CHECK(cudaEventCreate(&start));
  ATTNFUZZ_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < runs; ++i) {
    ATTNFUZZ_CUDA_CHECK(cudaEventRecord(start));
    kernel.forward(problem, tensors, PlantedBug::none);
    ATTNFUZZ_CUDA_CHECK(cudaEventRecord(stop));
    ATTNFUZZ_CUDA_CHECK(cudaEventSynchronize(stop));
    float milliseconds = 0.0f;
    ATTNFUZZ_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    times.push_back(milliseconds);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(times.begin(), times.begin() + runs / 2, times.end());
  return times[runs / 2];
}

int run(int argc, char** argv) {
  int runs = 30, warmup = 5;
  std::string kernel_name = "cuda_flash";
  CLI::App app{"bench_cuda_flash: TFLOP/s of a CUDA attention kernel"};
  app.add_option("--runs", runs, "Timed calls per shape (the median is printed)");
  app.add_option("--warmup", warmup, "Untimed calls first");
  app.add_option("--kernel", kernel_name, "Kernel to time");
  CLI11_PARSE(app, argc, argv);
  if (!cuda_device_status().usable) {
    std::printf("bench_cuda_flash: skipped: %s\n", cuda_device_status().description.c_str());
    return 2;
  }
  const AttentionKernel* kernel = find_kernel(kernel_name);
  if (kernel == nullptr || kernel->site() != ExecutionSite::cuda_device) {
    std::fprintf(stderr, "bench_cuda_flash: no CUDA kernel named %s\n", kernel_name.c_str());
    return 3;
  }
  std::printf("device: %s\nkernel: %s, fp16, BSHD, median of %d runs after %d warm-ups\n",
              cuda_device_status().description.c_str(), kernel_name.c_str(), runs, warmup);
  std::printf("%-7s %-6s %-5s %-6s %-6s %10s %10s %s\n", "causal", "D", "B", "H", "S", "ms",
              "TFLOP/s", "check");
  int failed = 0;
  for (const bool causal : {false, true}) {
    for (const std::int64_t head_dim : {64, 128}) {
      for (const std::int64_t seq_len : {512, 1024, 2048, 4096}) {
        AttentionCase shape;
        shape.batch = kTokens / seq_len;
        shape.heads = shape.kv_heads = kModelWidth / head_dim;
        shape.seq_len_q = shape.seq_len_k = seq_len;
        shape.head_dim = head_dim;
        shape.causal = causal;
        const bool correct = slice_passes(kernel_name, shape);
        failed += !correct;
        const AttentionProblem problem = problem_of(shape);
        const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
        DeviceArray<std::uint16_t> q(inputs.q.size()), k(inputs.k.size()), v(inputs.v.size()),
            o(static_cast<std::size_t>(
                span_elements(problem.o_strides, problem.batch, seq_len, problem.heads, head_dim)));
        q.copy_from_host(inputs.q.data(), inputs.q.size());
        k.copy_from_host(inputs.k.data(), inputs.k.size());
        v.copy_from_host(inputs.v.data(), inputs.v.size());
        const AttentionTensors tensors{q.get(), k.get(), v.get(), o.get()};
        const double milliseconds = median_milliseconds(*kernel, problem, tensors, warmup, runs);
        const double flops = attention_flops(problem) * (causal ? 0.5 : 1.0);
        std::printf("%-7s %-6lld %-5lld %-6lld %-6lld %10.3f %10.1f %s\n", causal ? "yes" : "no",
                    static_cast<long long>(head_dim), static_cast<long long>(shape.batch),
                    static_cast<long long>(shape.heads), static_cast<long long>(seq_len),
                    milliseconds, flops / (milliseconds * 1e-3) / 1e12, correct ? "pass" : "FAIL");
        std::fflush(stdout);
      }
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace attnfuzz

int main(int argc, char** argv) {
  try {
    return attnfuzz::run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_cuda_flash: %s\n", error.what());
    return 3;
  }
}
