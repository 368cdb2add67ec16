// SPDX-License-Identifier: BSD-3-Clause
#include "options/run_settings_options.h"

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "core/harness_error.h"
#include "core/parallel_for.h"
#include "kernels/plugin_kernel.h"
#include "options/python_kernel_options.h"

namespace attnfuzz {
namespace {

// More runs than this are a typo rather than a plan: each run costs a whole kernel call per case.
constexpr int kMaxRepeats = 1000;
// An hour of timing per case is more than any gate needs; past it, a typo.
constexpr double kMaxBenchSeconds = 3600;
constexpr int kMaxBenchRounds = 100;

constexpr Backend kBackends[] = {Backend::auto_select, Backend::cpu, Backend::cuda};
constexpr OracleChoice kOracles[] = {OracleChoice::auto_select, OracleChoice::cpu,
                                     OracleChoice::cuda};

// "{auto,cpu,cuda}": CLI11's notation for a set of values.
template <typename Value, std::size_t count>
std::string choices_of(const Value (&values)[count], std::string_view (*name)(Value)) {
  std::string text = "{";
  for (const Value value : values) text += std::string(name(value)) + ",";
  text.back() = '}';
  return text;
}

}  // namespace

std::vector<FlagChoices> flag_choices() {
  std::string accumulations = "{fp32";
  for (const DtypeTraits& traits : output_dtypes()) {
    accumulations += "," + std::string(traits.name) + "[/KEYS]";
  }
  accumulations += ",input[/KEYS]";
  std::string probabilities = "{output,v";
  for (const DtypeTraits& traits : kDtypeTraits) probabilities += "," + std::string(traits.name);
  return {{"--backend", choices_of(kBackends, backend_name)},
          {"--oracle", choices_of(kOracles, oracle_choice_name)},
          {"--accumulation", accumulations + "}"},
          {"--probabilities", probabilities + "}"},
          {"--dequantize-to", "{none,output,fp16,bf16}"}};
}

DeclaredNumerics parse_declared_accumulation(std::string_view name) {
  const std::optional<DeclaredNumerics> numerics = parse_accumulation(name);
  if (!numerics) {
    throw HarnessError(
        "--accumulation: expected fp32, or fp16, bf16 or input (each case's dtype) with an "
        "optional /KEYS (keys summed in fp32 between roundings, 1 to " +
        std::to_string(kMaxKeysPerRounding) + "), got '" + std::string(name) + "'");
  }
  return *numerics;
}

DeclaredNumerics parse_declared_probabilities(std::string_view name, DeclaredNumerics numerics) {
  const std::optional<DeclaredNumerics> declared = parse_probabilities(name, numerics);
  if (!declared) {
    std::string dtypes;
    for (const DtypeTraits& traits : kDtypeTraits) {
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(traits.name);
    }
    throw HarnessError(
        "--probabilities: expected output (P rounded to the output dtype), v (to V's storage "
        "dtype) or a dtype (" +
        dtypes + "), got '" + std::string(name) + "'");
  }
  return *declared;
}

DeclaredNumerics parse_declared_dequantization(std::string_view name, DeclaredNumerics numerics) {
  const std::optional<DeclaredNumerics> declared = parse_dequantization(name, numerics);
  if (!declared) {
    throw HarnessError(
        "--dequantize-to: expected none (fp8 inputs decoded exactly, their factors folded into the "
        "scale and the output), output (into the output dtype) or fp16 or bf16, got '" +
        std::string(name) + "'");
  }
  return *declared;
}

Backend parse_backend(std::string_view name) {
  for (Backend backend : kBackends) {
    if (backend_name(backend) == name) return backend;
  }
  throw HarnessError("--backend: unknown backend '" + std::string(name) + "' (auto, cpu or cuda)");
}

OracleChoice parse_oracle(std::string_view name) {
  for (OracleChoice choice : kOracles) {
    if (oracle_choice_name(choice) == name) return choice;
  }
  throw HarnessError("--oracle: unknown oracle '" + std::string(name) + "' (auto, cpu or cuda)");
}

PlantedBug parse_plant(std::string_view name) {
  const std::optional<PlantedBug> plant = parse_planted_bug(name);
  if (!plant) {
    throw HarnessError("--plant: unknown planted bug '" + std::string(name) +
                       "' (fuzz_attention --list-kernels lists each kernel's plants)");
  }
  return *plant;
}

void apply_thread_count(int threads) {
  if (threads < 0) throw HarnessError("--threads: must be >= 0");
  set_default_thread_count(threads);
  // A plugin that carries its own copy of the harness's threads (the built-in kernel plugin, the
  // reference of a side-by-side run) reads them from the environment: the same count for both.
  if (threads > 0) setenv("ATTNFUZZ_THREADS", std::to_string(threads).c_str(), 1);
}

KernelSource kernel_source_of(const HarnessOptions& options) {
  if (const std::optional<std::string> bridge = prepare_kernel_py(options)) {
    return {*bridge, "--kernel-py " + options.kernel_py, "--kernel-py " + options.kernel_py};
  }
  return {options.kernel_lib, "--kernel-lib", "--kernel-lib " + options.kernel_lib};
}

std::string load_kernel_source(const KernelSource& source) {
  if (source.plugin.empty()) return "";
  try {
    return std::string(load_plugin_kernel(source.plugin).name());
  } catch (const std::runtime_error& error) {
    throw HarnessError(source.flag + ": " + error.what());
  }
}

std::string load_reference_plugin(const HarnessOptions& options) {
  if (options.against_lib.empty()) return "";
  try {
    return std::string(load_plugin_kernel(options.against_lib, "@reference").name());
  } catch (const std::runtime_error& error) {
    throw HarnessError(std::string("--against-lib: ") + error.what());
  }
}

BenchSettings bench_settings_of(const HarnessOptions& options) {
  const bool side_by_side = !options.against_lib.empty() || !options.against_kernel.empty() ||
                            !options.against_plant.empty();
  const bool bench_flag_without_bench =
      !options.bench && (!options.baseline.empty() || options.compare_anyway || side_by_side);
  if (bench_flag_without_bench) {
    throw HarnessError(
        "--baseline, --compare-anyway, --against-lib, --against-kernel and --against-plant need "
        "--bench");
  }
  if (!options.against_lib.empty() && !options.against_kernel.empty()) {
    throw HarnessError("--against-lib and --against-kernel each name the reference kernel: one");
  }
  if (side_by_side && !options.baseline.empty()) {
    throw HarnessError(
        "--against-* times a reference kernel side by side, --baseline compares with a stored "
        "report: one or the other");
  }
  if (options.fail_on_suspect && options.baseline.empty()) {
    throw HarnessError(
        "--fail-on-suspect goes with --baseline (side by side, a regression fails however loaded "
        "the machine)");
  }
  if (options.bench && options.properties) {
    throw HarnessError("--bench times the cases of a matrix; it does not go with --properties");
  }
  if (!(options.bench_seconds > 0 && options.bench_seconds <= kMaxBenchSeconds)) {
    throw HarnessError("--bench-seconds: must be more than 0 and at most " +
                       std::to_string(int(kMaxBenchSeconds)) + ", got " +
                       std::to_string(options.bench_seconds));
  }
  if (options.bench_rounds < 1 || options.bench_rounds > kMaxBenchRounds) {
    throw HarnessError("--bench-rounds: must be from 1 to " + std::to_string(kMaxBenchRounds) +
                       ", got " + std::to_string(options.bench_rounds));
  }
  if (!(options.bench_ci > 0 && options.bench_ci <= 1)) {
    throw HarnessError("--bench-ci: must be a fraction of the median above 0 and at most 1, got " +
                       std::to_string(options.bench_ci));
  }
  if (!(options.max_slowdown >= 0 && options.max_slowdown <= 10)) {
    throw HarnessError("--max-slowdown: must be a fraction from 0 to 10 (0.03 is 3%), got " +
                       std::to_string(options.max_slowdown));
  }
  BenchSettings bench;
  bench.enabled = options.bench;
  bench.rounds = options.bench_rounds;
  bench.seconds_per_case = options.bench_seconds;
  bench.target_ci_width = options.bench_ci;
  return bench;
}

namespace {

// A bug of the backward pass changes nothing a benchmark times (forward passes): as the reference
// of a side-by-side timing it would time the correct kernel under its name.
void refuse_backward_plant(std::string_view flag, const std::string& name, PlantedBug plant) {
  if (plant == PlantedBug::none || planted_bug_info(plant).detector != PlantDetector::backward) {
    return;
  }
  throw HarnessError(std::string(flag) + " " + name +
                     ": a bug of the backward pass, which --bench does not time (it times "
                     "forward passes; the backward pass is judged in cases with \"backward\": "
                     "true, see docs/detection.md, The backward pass)");
}

}  // namespace

RunSettings run_settings_of(const HarnessOptions& options, const std::string& plugin_kernel,
                            const std::string& reference_plugin_kernel) {
  RunSettings settings;
  settings.backend = parse_backend(options.backend);
  settings.oracle = parse_oracle(options.oracle);
  settings.plant = parse_plant(options.plant);
  if (options.in_process && settings.plant != PlantedBug::none &&
      planted_bug_info(settings.plant).detector == PlantDetector::containment) {
    throw HarnessError("--plant " + options.plant +
                       ": a bug of memory or time, which a run survives only contained in "
                       "workers: not with --in-process");
  }
  settings.kernel = options.kernel.empty() ? plugin_kernel : options.kernel;
  settings.kernel_lib = options.kernel_lib;
  settings.kernel_py_flags = kernel_py_flags_of(options);
  if (options.repeats < 1 || options.repeats > kMaxRepeats) {
    throw HarnessError("--repeats: must be from 1 (no determinism check) to " +
                       std::to_string(kMaxRepeats) + ", got " + std::to_string(options.repeats));
  }
  settings.repeats = options.repeats;
  settings.allow_nondeterminism = options.allow_nondeterminism;
  settings.host_verification = options.host_verification;
  settings.shape_independent_arithmetic = options.shape_independent_arithmetic;
  settings.numerics = parse_declared_dequantization(
      options.dequantize_to,
      parse_declared_probabilities(options.probabilities,
                                   parse_declared_accumulation(options.accumulation)));
  settings.bench = bench_settings_of(options);
  if (!options.against_lib.empty() || !options.against_kernel.empty() ||
      !options.against_plant.empty()) {
    ReferenceKernel& reference = settings.reference.emplace();
    reference.kernel =
        !options.against_kernel.empty() ? options.against_kernel : reference_plugin_kernel;
    if (!options.against_plant.empty()) {
      const std::optional<PlantedBug> plant = parse_planted_bug(options.against_plant);
      if (!plant) {
        throw HarnessError("--against-plant: unknown planted bug '" + options.against_plant +
                           "' (fuzz_attention --list-kernels lists each kernel's plants)");
      }
      refuse_backward_plant("--against-plant", options.against_plant, *plant);
      reference.plant = *plant;
    }
  }
  return settings;
}

}  // namespace attnfuzz
