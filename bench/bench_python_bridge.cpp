// SPDX-License-Identifier: BSD-3-Clause
// What the Python bridge (fuzz_attention --kernel-py, bridges/python/) costs a kernel call: a
// function that does nothing (tests/python/bench_kernels.py) called through it on a case of
// B=1 H=1 S=128 D=64 fp16, dense and with every variant's argument, each the median over --calls
// calls after a warm-up: the ctypes reads of the ABI's structs, the tensor views and the call.
//
//   bench_python_bridge [--python PATH] [--calls N]
// PATH: an interpreter with numpy (default: build-tools/python/bin/python, scripts/python_env.sh).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/data_distribution.h"
#include "core/harness_error.h"
#include "kernels/kernel_registry.h"
#include "options/run_settings_options.h"
#include "run/guarded_output.h"
#include "run/kernel_inputs.h"

namespace {

using namespace attnfuzz;

double median_microseconds(const AttentionKernel& kernel, const AttentionCase& attention_case,
                           int calls) {
  const AttentionProblem problem = problem_of(attention_case);
  const AttentionInputs inputs = generate_inputs(problem, DataDistribution::normal, 1);
  KernelInputs handed = KernelInputs::copy_of(problem, inputs);
  GuardedOutput output(problem);
  const AttentionTensors tensors = handed.bind(output.data(), output.lse());
  for (int call = 0; call < 20; ++call) kernel.forward(problem, tensors, PlantedBug::none);
  std::vector<double> microseconds;
  for (int call = 0; call < calls; ++call) {
    const auto started = std::chrono::steady_clock::now();
    kernel.forward(problem, tensors, PlantedBug::none);
    microseconds.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started)
            .count());
  }
  std::nth_element(microseconds.begin(), microseconds.begin() + calls / 2, microseconds.end());
  return microseconds[calls / 2];
}

}  // namespace

int main(int argc, char** argv) {
  HarnessOptions options;
  options.python = std::string(ATTNFUZZ_SOURCE_DIR) + "/build-tools/python/bin/python";
  options.kernel_py =
      std::string(ATTNFUZZ_SOURCE_DIR) + "/tests/python/bench_kernels.py:does_nothing";
  int calls = 2000;
  for (int arg = 1; arg + 1 < argc; arg += 2) {
    if (std::strcmp(argv[arg], "--python") == 0) options.python = argv[arg + 1];
    if (std::strcmp(argv[arg], "--calls") == 0) calls = std::max(1, std::atoi(argv[arg + 1]));
  }
  try {
    const std::string name = load_kernel_source(kernel_source_of(options));
    const AttentionKernel& kernel = *find_kernel(name);
    AttentionCase dense;
    dense.seq_len_q = dense.seq_len_k = 128;
    AttentionCase variants = dense;
    variants.batch = 2;
    variants.seq_lens_q = {128, 100};
    variants.seq_lens_k = {128, 90};
    variants.page_size = 16;
    variants.window_left = 32;
    variants.softcap = 30.0;
    variants.alibi = true;
    variants.return_lse = true;
    std::printf("the Python bridge's cost per call, a function that does nothing, median of %d\n",
                calls);
    std::printf("  B=1 H=1 S=128 D=64 fp16, dense:                    %7.1f us\n",
                median_microseconds(kernel, dense, calls));
    std::printf("  B=2 H=1 S=128 D=64 fp16, every variant's argument: %7.1f us\n",
                median_microseconds(kernel, variants, calls));
  } catch (const HarnessError& error) {
    std::fprintf(stderr, "bench_python_bridge: %s\n", error.what());
    return 3;
  }
  return 0;
}
