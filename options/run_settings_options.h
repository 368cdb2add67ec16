// SPDX-License-Identifier: BSD-3-Clause
// What the run-settings flags of the table (options/harness_options.h) mean: their strings into
// RunSettings, once for fuzz_attention and fuzz_attention_libfuzzer. Every parser throws
// HarnessError naming its flag and what it accepts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/planted_bug.h"
#include "options/harness_options.h"
#include "run/case_runner.h"

namespace attnfuzz {

// The words a flag with a few fixed values takes, for --help: {"--backend", "{auto,cpu,cuda}"}.
struct FlagChoices {
  std::string flag;
  std::string choices;
};
std::vector<FlagChoices> flag_choices();

// --backend: auto, cpu or cuda.
Backend parse_backend(std::string_view name);
// --oracle: auto, cpu or cuda.
OracleChoice parse_oracle(std::string_view name);
// --accumulation: fp32 (the locked numerics), fp16 or bf16.
DeclaredNumerics parse_declared_accumulation(std::string_view name);
// --plant: none or a planted bug's name (kernels/planted_bug.h).
PlantedBug parse_plant(std::string_view name);
// --threads: the process's default thread count (0: the default of core/parallel_for.h).
void apply_thread_count(int threads);

// --kernel-lib: loads the plugin into the kernel registry (once per process: a second load of the
// same plugin is an error) and returns the name of the kernel it reports; "" for an empty path.
std::string load_kernel_lib(const std::string& path);

// --bench, --bench-rounds, --bench-seconds, --bench-ci (and that --baseline and --compare-anyway
// come with --bench, and --max-slowdown is sane). Throws HarnessError.
BenchSettings bench_settings_of(const HarnessOptions& options);

// The run settings the flags name: --backend, --oracle, --plant, --accumulation, --kernel-lib
// (loaded already by load_kernel_lib, which returned `plugin_kernel`), the kernel (--kernel when
// given, else the plugin's kernel, else none: each case's own, or the backend's default) and
// --bench's.
RunSettings run_settings_of(const HarnessOptions& options, const std::string& plugin_kernel);

}  // namespace attnfuzz
