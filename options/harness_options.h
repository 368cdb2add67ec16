// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention's command line, declared once as a table (as libFuzzer's FuzzerFlags.def): the
// options struct, the help text and the CLI11 parser are all generated from ATTNFUZZ_FLAGS. The
// libFuzzer target (fuzz/libfuzzer_target.cpp) reads the table's SHARED_OPTION rows through the
// same CLI11 calls (parse_shared_options), and both turn the values into run settings with the
// same parsers (options/run_settings_options.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnfuzz {

// X(kind, type, member, flag, default, help). kind: OPTION takes a value, FLAG is a switch;
// HIDDEN_ ones are left out of --help (how fuzz_attention starts its own worker processes);
// SHARED_OPTION is an OPTION that fuzz_attention_libfuzzer reads too, as --flag=value or from
// the environment variable ATTNFUZZ_<FLAG> (flag_environment_name).
#define ATTNFUZZ_FLAGS(X)                                                                          \
  X(OPTION, std::string, configs, "--configs", "",                                                 \
    "Matrix file to run (JSON). Default: the built-in corpus/matrix/pr.json")                      \
  X(OPTION, std::string, replay, "--replay", "",                                                   \
    "Run saved cases: a case file (binary, e.g. a libFuzzer crash, or JSON) or a folder of them")  \
  X(OPTION, std::string, save_cases, "--save-cases", "",                                           \
    "Write each selected case as a binary case file into this folder (a seed corpus), then exit")  \
  X(OPTION, std::string, describe, "--describe", "",                                               \
    "Print the cases of a case file as JSON without running them, then exit")                      \
  X(FLAG, bool, properties, "--properties", false,                                                 \
    "Search for a case that breaks a property (RapidCheck) instead of running a matrix")           \
  X(OPTION, double, budget, "--budget", 30.0, "Seconds for --properties")                          \
  X(OPTION, std::vector<std::string>, property_names, "--property", {},                            \
    "Only this property (repeatable; see --list-properties)")                                      \
  X(OPTION, std::uint64_t, seed, "--seed", 1, "Seed of the --properties search")                   \
  X(OPTION, std::string, regressions, "--regressions", "corpus/regressions",                       \
    "Folder where --properties saves each minimal failing case")                                   \
  X(FLAG, bool, list_properties, "--list-properties", false, "List the properties, then exit")     \
  X(FLAG, bool, bench, "--bench", false,                                                           \
    "Also time each case that passes (the performance gate); default matrix: corpus/matrix/"       \
    "bench.json")                                                                                  \
  X(OPTION, int, bench_rounds, "--bench-rounds", 5,                                                \
    "With --bench: time each case in this many rounds, spread over the run")                       \
  X(OPTION, double, bench_seconds, "--bench-seconds", 2.0,                                         \
    "With --bench: seconds of timed repetitions per case at most (over all its rounds)")           \
  X(OPTION, double, bench_ci, "--bench-ci", 0.02,                                                  \
    "With --bench: stop timing a case once its median's 95% interval is this narrow (fraction)")   \
  X(OPTION, std::string, baseline, "--baseline", "",                                               \
    "With --bench: an earlier --bench --json report; a case slower than --max-slowdown fails")     \
  X(OPTION, double, max_slowdown, "--max-slowdown", 0.03,                                          \
    "With --baseline or --against-*: the slowdown allowed (0.03: 3%), exceeded at 95% confidence " \
    "to fail")                                                                                     \
  X(FLAG, bool, compare_anyway, "--compare-anyway", false,                                         \
    "With --baseline: compare with a baseline of another device, driver or matrix (else exit 3)")  \
  X(FLAG, bool, fail_on_suspect, "--fail-on-suspect", false,                                       \
    "With --baseline: fail a regression timed on a loaded CPU or a throttled GPU too (else it is " \
    "reported as suspect)")                                                                        \
  X(OPTION, std::string, against_lib, "--against-lib", "",                                         \
    "With --bench: time each case beside this plugin's kernel (the old build), side by side, and " \
    "fail a case slower than it by more than --max-slowdown")                                      \
  X(OPTION, std::string, against_kernel, "--against-kernel", "",                                   \
    "With --bench: time each case beside this built-in kernel, side by side (as --against-lib)")   \
  X(OPTION, std::string, against_plant, "--against-plant", "",                                     \
    "With --bench: time each case beside the reference kernel with this plant (none: the correct " \
    "one); alone, beside the run's own kernel")                                                    \
  X(SHARED_OPTION, std::string, backend, "--backend", "auto",                                      \
    "auto: CUDA kernels when a usable GPU exists, else the CPU twins; cpu; cuda")                  \
  X(SHARED_OPTION, std::string, oracle, "--oracle", "auto",                                        \
    "auto: cuBLAS float64 for large cases run on a GPU, else CPU float64; cpu; cuda")              \
  X(SHARED_OPTION, std::string, kernel, "--kernel", "", "Run every case on this kernel")           \
  X(SHARED_OPTION, std::string, kernel_lib, "--kernel-lib", "",                                    \
    "Load a kernel plugin (a shared library, include/attnfuzz/attnfuzz_plugin.h) and run on it")   \
  X(SHARED_OPTION, std::string, kernel_py, "--kernel-py", "",                                      \
    "Run on a Python function: FILE.py:FUNCTION or MODULE:FUNCTION (docs/python.md)")              \
  X(SHARED_OPTION, std::string, python, "--python", "",                                            \
    "With --kernel-py: the interpreter whose packages to use (default: python3 on PATH; a "        \
    "virtual "                                                                                     \
    "environment's python works)")                                                                 \
  X(SHARED_OPTION, std::string, py_framework, "--py-framework", "numpy",                           \
    "With --kernel-py: the tensors the function is handed: numpy, torch or jax")                   \
  X(SHARED_OPTION, std::string, plant, "--plant", "none",                                          \
    "Switch on a planted bug in the kernel (see --list-kernels)")                                  \
  X(OPTION, std::string, shard, "--shard", "",                                                     \
    "Run only part I of N of the matrix (e.g. 2/4): disjoint parts that together are the whole")   \
  X(OPTION, std::vector<std::string>, case_ids, "--case", {},                                      \
    "Run only the cases whose id matches (repeatable; * ? [..] as in the shell): edges/12, "       \
    "'pr/1*'")                                                                                     \
  X(OPTION, std::string, json, "--json", "", "Write the JSON report here (atomically)")            \
  X(OPTION, std::string, junit, "--junit", "", "Write a JUnit XML report here (atomically)")       \
  X(OPTION, std::string, markdown, "--markdown", "",                                               \
    "Write a Markdown summary here (atomically), e.g. $GITHUB_STEP_SUMMARY")                       \
  X(OPTION, std::string, html, "--html", "",                                                       \
    "Write a self-contained HTML report with an error_ratio heatmap here (atomically)")            \
  X(SHARED_OPTION, int, threads, "--threads", 0, "Threads for kernels and oracle (0: all cores)")  \
  X(SHARED_OPTION, int, repeats, "--repeats", 2,                                                   \
    "Runs of the kernel per case on the same inputs; from 2 on each must write the same bits")     \
  X(FLAG, bool, allow_nondeterminism, "--allow-nondeterminism", false,                             \
    "The kernel may write different bits on each run (atomics): judge every run on its own")       \
  X(FLAG, bool, host_verification, "--host-verification", false,                                   \
    "A device kernel's case checked on the host: inputs, oracle, comparison (the slower path, "    \
    "for comparing the two)")                                                                      \
  X(FLAG, bool, shape_independent_arithmetic, "--shape-independent-arithmetic", false,             \
    "A row's arithmetic does not depend on batch, heads or kv_heads: properties comparing two "    \
    "such shapes demand equal bits")                                                               \
  X(SHARED_OPTION, std::string, accumulation, "--accumulation", "fp32",                            \
    "The kernel's P.V accumulator, declared: dtype (input: the case's), /KEYS per rounding")       \
  X(SHARED_OPTION, std::string, probabilities, "--probabilities", "output",                        \
    "The dtype the kernel rounds P to before P.V, declared: output, v (V's storage dtype), a "     \
    "dtype")                                                                                       \
  X(SHARED_OPTION, std::string, dequantize_to, "--dequantize-to", "none",                          \
    "The 16-bit dtype the kernel dequantizes fp8 inputs into (each times its factor) before its "  \
    "products, declared: none (decoded exactly, the factors folded), output, fp16, bf16")          \
  X(OPTION, std::string, stream, "--stream", "",                                                   \
    "Append each case's result to this JSON Lines file the moment it finishes (synced to disk)")   \
  X(OPTION, std::string, resume, "--resume", "",                                                   \
    "Read a --stream file of an interrupted run, run only the cases missing from it, append them") \
  X(OPTION, double, case_timeout, "--case-timeout", 300.0,                                         \
    "Seconds one case may take before its worker is killed and the case fails as hung (0: none)")  \
  X(OPTION, std::int64_t, memory_limit, "--memory-limit", 0,                                       \
    "MiB of resident memory one worker may use; a case past it is skipped, or fails as a leak "    \
    "when the memory was kept from earlier cases (0: 3/4 of RAM)")                                 \
  X(OPTION, std::string, devices, "--devices", "",                                                 \
    "Run one worker per listed GPU (e.g. 0,1), sharing the cases; default: one worker")            \
  X(FLAG, bool, in_process, "--in-process", false,                                                 \
    "Run cases in this process, not in worker processes: no containment (for debuggers)")          \
  X(OPTION, std::string, known_failures, "--known-failures", "",                                   \
    "Failures you cannot fix (upstream bugs), JSON: a listed case that fails so is 'known', "      \
    "counted neither way; one that passes fails the run (docs/usage.md)")                          \
  X(FLAG, bool, fail_on_skip, "--fail-on-skip", false,                                             \
    "Exit 1 when a case could not run here (no GPU, kernel not built, out of memory)")             \
  X(HIDDEN_FLAG, bool, worker, "--worker", false, "Serve cases to a supervising fuzz_attention")   \
  X(HIDDEN_FLAG, bool, probe_plugin, "--probe-plugin", false,                                      \
    "Load --kernel-lib, print its kernel's name and exit: the child process that tries a plugin")  \
  X(FLAG, bool, fail_fast, "--fail-fast", false,                                                   \
    "Stop at the first failing case (or, with --properties, the first failing property)")          \
  X(FLAG, bool, quiet, "--quiet", false, "Print only failing and skipped cases and the summary")   \
  X(OPTION, double, progress_every, "--progress-every", 10.0,                                      \
    "When stderr is not a terminal (a CI log), a progress line there every S seconds (0: none)")   \
  X(FLAG, bool, list_cases, "--list-cases", false,                                                 \
    "List the id and shape of each case the run would run (after --case and --shard), then exit")  \
  X(FLAG, bool, list_kernels, "--list-kernels", false,                                             \
    "List kernels, what they support and their planted bugs, then exit")                           \
  X(FLAG, bool, version, "--version", false,                                                       \
    "Print the version, git commit, build, CUDA runtime and cuBLAS versions, then exit")

struct HarnessOptions {
#define ATTNFUZZ_FLAG_MEMBER(kind, type, member, flag, default_value, help) \
  type member = default_value;
  ATTNFUZZ_FLAGS(ATTNFUZZ_FLAG_MEMBER)
#undef ATTNFUZZ_FLAG_MEMBER
};

// Parses argv. Returns the options, or throws HarnessError on bad flags. `--help` prints the help
// and exits the process with 0.
HarnessOptions parse_harness_options(int argc, char** argv);

// The environment variable that stands for a SHARED_OPTION row's flag in fuzz_attention_libfuzzer:
// "ATTNFUZZ_" and the flag's name in capitals, '-' as '_' ("--kernel-lib": ATTNFUZZ_KERNEL_LIB).
std::string flag_environment_name(std::string_view flag);

// fuzz_attention_libfuzzer's settings: the SHARED_OPTION rows only (--backend, --oracle, --kernel,
// --kernel-lib, --plant, --threads, --repeats, --accumulation), each from its last `--flag=value`
// in argv, else from its environment variable ATTNFUZZ_<FLAG> when that is set and not empty, else
// from `defaults`. Every other argument is left to libFuzzer (its own -flag=value, corpus folders,
// and any other --flag, which it ignores); `--flag value` with a space is not read. Throws
// HarnessError on a value of the wrong type; what the values mean is checked by
// options/run_settings_options.h.
HarnessOptions parse_shared_options(HarnessOptions defaults, int argc, char** argv);

}  // namespace attnfuzz
