// SPDX-License-Identifier: BSD-3-Clause
// Times a kernel on one case for fuzz_attention --bench, after the case has passed: untimed
// warm-up calls, then timed calls until the median is known closely enough or the case's time
// budget is spent (perf/kernel_performance.h, BenchSettings). A host kernel is timed by the steady
// clock around each call; a device kernel by CUDA events around it, with the L2 cache overwritten
// before each call so that no call finds the previous one's data cached (a kernel's first call in
// a real model does not), and the GPU's NVML readings taken before and after.
#pragma once

#include <cstdint>

#include "case/data_distribution.h"
#include "kernels/attention_kernel.h"
#include "perf/kernel_performance.h"

namespace attnfuzz {

// FLOPs of the two matrix products, halved when causal (the masked half is not computed by a kernel
// worth timing): what the throughput figures count.
double bench_flops(const AttentionProblem& problem);

// The bytes a kernel must move at the least: Q, K and V read once and O written once.
double bench_bytes(const AttentionProblem& problem);

// A kernel as it is timed: which, and with which planted bug.
struct TimedKernel {
  const AttentionKernel* kernel = nullptr;
  PlantedBug plant = PlantedBug::none;
};

// One round's samples, with their statistics, the work and (on a GPU) the machine readings and
// roofline, of `kernel` on the case. Throws std::runtime_error when a call fails.
KernelPerformance time_kernel(const AttentionKernel& kernel, const AttentionProblem& problem,
                              const AttentionInputs& inputs, PlantedBug plant,
                              const BenchSettings& settings);

// One round of `candidate` beside `reference` (fuzz_attention --bench --against-*): both handed
// the same inputs and output buffers, both warmed up, then pairs of equal blocks of calls, each
// pair back to back in an order drawn from `order_seed`; the candidate's blocks are the result's
// rounds_ms, the reference's its `reference`. Both must run on the same site. Throws
// std::runtime_error when a call fails, naming the kernel.
KernelPerformance time_side_by_side(const TimedKernel& candidate, const TimedKernel& reference,
                                    const AttentionProblem& problem, const AttentionInputs& inputs,
                                    const BenchSettings& settings, std::uint64_t order_seed);

}  // namespace attnfuzz
