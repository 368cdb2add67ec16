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
// --probabilities: output (the locked numerics), v (V's storage dtype) or a dtype; `numerics` with
// it declared.
DeclaredNumerics parse_declared_probabilities(std::string_view name, DeclaredNumerics numerics);
// --dequantize-to: none (the locked numerics), output or a 16-bit dtype; `numerics` with it
// declared.
DeclaredNumerics parse_declared_dequantization(std::string_view name, DeclaredNumerics numerics);
// --plant: none or a planted bug's name (kernels/planted_bug.h).
PlantedBug parse_plant(std::string_view name);
// --threads: the process's default thread count (0: the default of core/parallel_for.h).
void apply_thread_count(int threads);

// Where the kernel under test comes from when it is not built in: a plugin (--kernel-lib), or the
// Python bridge's plugin for --kernel-py (options/python_kernel_options.h, whose environment it
// sets). `flag` starts the messages about loading it ("--kernel-lib", the plugin's path following;
// "--kernel-py SPEC"), `named` says what it is ("--kernel-lib PATH", "--kernel-py SPEC"); `plugin`
// is empty when neither flag is given.
struct KernelSource {
  std::string plugin;
  std::string flag;
  std::string named;
};
KernelSource kernel_source_of(const HarnessOptions& options);

// Loads the source's plugin into the kernel registry (once per process: a second load of the same
// plugin is an error) and returns the name of the kernel it reports; "" for no plugin.
std::string load_kernel_source(const KernelSource& source);

// --against-lib's plugin, loaded into the kernel registry as the reference of a side-by-side
// benchmark (under its name, or with "@reference" appended when --kernel-lib's has that name);
// returns the name it is registered under, or "" without --against-lib. Throws HarnessError.
std::string load_reference_plugin(const HarnessOptions& options);

// --bench, --bench-rounds, --bench-seconds, --bench-ci (and that --baseline and --compare-anyway
// come with --bench, and --max-slowdown is sane). Throws HarnessError.
BenchSettings bench_settings_of(const HarnessOptions& options);

// The run settings the flags name: --backend, --oracle, --plant, --accumulation, --kernel-lib
// or --kernel-py (loaded already by load_kernel_source, which returned `plugin_kernel`), the kernel
// (--kernel when given, else the plugin's kernel, else none: each case's own, or the backend's
// default) and
// --bench's.
// `reference_plugin_kernel`: what load_reference_plugin returned.
RunSettings run_settings_of(const HarnessOptions& options, const std::string& plugin_kernel,
                            const std::string& reference_plugin_kernel = "");

}  // namespace attnfuzz
