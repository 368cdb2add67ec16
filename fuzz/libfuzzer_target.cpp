// SPDX-License-Identifier: BSD-3-Clause
// The coverage-guided engine: libFuzzer's entry points over the shared case model.
//
// Each input is a binary case (case/case_codec.h). A custom mutator writes each of libFuzzer's
// mutations back as the case it decodes to (decode_any_bytes), so that every mutation run is a
// case and every crash file one that --replay reads exactly; inputs of a corpus that are not cases
// (and the empty input libFuzzer runs first) are counted and left out. The case runs on the kernel
// under test against the float64 oracle; a failing case is printed as JSON with a replay command,
// then the process aborts so that libFuzzer writes the crash file. Beside the instrumented code's
// own coverage, extra counters (libFuzzer's __libfuzzer_extra_counters) mark which shape classes a
// case hit and how large its error was relative to the tolerance, so the fuzzer keeps inputs that
// reach new tail tiles, diagonal positions, GQA ratios and head dims, and climbs toward larger
// errors. With a CUDA kernel, the kernel's own device-side coverage points
// (kernels/device_coverage.h) are copied into extra counters after every case too.
//
//   fuzz_attention_libfuzzer [libFuzzer flags] [--kernel=NAME] [--kernel-lib=PLUGIN.so]
//                            [--plant=NAME] [--backend=NAME] [--oracle=NAME] [--threads=N]
//                            [--repeats=N] [--accumulation=A[/KEYS]] [--probabilities=P]
//                            [--dequantize-to=D]
//                            [--kernel-py=FILE.py:FUNCTION [--python=PATH] [--py-framework=F]]
//                            [CORPUS_DIR...]
// These are the rows of fuzz_attention's flag table marked SHARED_OPTION
// (options/harness_options.h), read and checked by the same code as fuzz_attention's
// (options/run_settings_options.h); only the `--flag=value` form is read, and libFuzzer ignores
// flags that start with "--". A flag that is not given comes from its environment variable when
// that is set and not empty (the flag wins):
//   ATTNFUZZ_KERNEL, ATTNFUZZ_KERNEL_LIB, ATTNFUZZ_PLANT, ATTNFUZZ_BACKEND, ATTNFUZZ_ORACLE,
//   ATTNFUZZ_THREADS, ATTNFUZZ_REPEATS, ATTNFUZZ_ACCUMULATION, ATTNFUZZ_PROBABILITIES,
//   ATTNFUZZ_DEQUANTIZE_TO, ATTNFUZZ_KERNEL_PY, ATTNFUZZ_PYTHON, ATTNFUZZ_PY_FRAMEWORK.
// Defaults are fuzz_attention's, except the backend: cpu (auto or cuda for the CUDA kernels). A
// plugin's kernel is the one fuzzed unless --kernel names another. A bad value, an unknown kernel
// or a kernel without the plant ends the process with kExitHarnessError (3) and the reason.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "case/case_codec.h"
#include "case/drawn_tensor_cache.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "core/text.h"
#include "fuzz/fuzz_counters.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/device_coverage.h"
#include "kernels/kernel_registry.h"
#include "options/harness_options.h"
#include "options/run_settings_options.h"
#include "run/case_runner.h"
#include "run/replay_command.h"

namespace attnfuzz {
namespace {

// What became of the inputs, printed as stat lines when the process exits (libFuzzer's own
// stat:: lines come with -print_final_stats=1).
struct InputTally {
  std::int64_t inputs = 0;
  std::int64_t not_cases = 0;  // rejected by the decoder (wrong magic, unusable scale, ...)
  std::int64_t fitted = 0;     // over the work cap, run fitted under it
  std::int64_t mutations = 0;  // made by the custom mutator
  std::int64_t rewritten = 0;  // of those, written back: not a case as mutated, or fitted
  std::int64_t too_long = 0;   // of those, whose case's exact form was longer than max_size
};
InputTally tally;

void print_tally() {
  const DrawnTensorCacheCounts draws = drawn_tensor_cache_counts();
  std::cerr << "attnfuzz: stat::inputs: " << tally.inputs << "\n"
            << "attnfuzz: stat::inputs_not_cases: " << tally.not_cases << "\n"
            << "attnfuzz: stat::inputs_fitted_to_work_cap: " << tally.fitted
            << " (work batch x heads x seq_len_q x seq_len_k x head_dim over 2^24)\n"
            << "attnfuzz: stat::mutations: " << tally.mutations << "\n"
            << "attnfuzz: stat::mutations_rewritten: " << tally.rewritten
            << " (not a case as mutated, or fitted under 2^20)\n"
            << "attnfuzz: stat::mutations_over_max_len: " << tally.too_long << "\n"
            << "attnfuzz: stat::input_tensors_reused: " << draws.reused << " of "
            << draws.reused + draws.drawn << " (drawn by an earlier case with the same data)\n";
}

// Work of most mutations (case/work_cap.h): a case's time grows with its work and rows, and a
// mutated length byte takes a row to thousands of keys, so 31 in 32 mutations are fitted under
// 2^20 (a few ms each); the 32nd keeps the binary form's whole cap, so that the largest cases stay
// within reach, and the seeds run as they are.
constexpr std::int64_t kMutationWorkCap = std::int64_t{1} << 20;
constexpr unsigned kFullCapOneIn = 32;

RunSettings& settings() {
  static RunSettings instance;
  return instance;
}

// The settings from the --flag=value arguments and ATTNFUZZ_* variables, checked as fuzz_attention
// checks them: the kernel exists here and carries the plant. Throws HarnessError.
RunSettings read_settings(int argc, char** argv) {
  HarnessOptions defaults;
  defaults.backend = "cpu";
  const HarnessOptions options = parse_shared_options(std::move(defaults), argc, argv);
  apply_thread_count(options.threads);
  const std::string plugin_kernel = load_kernel_source(kernel_source_of(options));
  RunSettings run_settings = run_settings_of(options, plugin_kernel);
  CaseRunner(run_settings).validate(AttentionCase{});
  return run_settings;
}

// A CUDA kernel's own coverage points join the counters when it can run here.
void enable_device_coverage_for(const RunSettings& run_settings) {
  const AttentionKernel* kernel = find_kernel(CaseRunner(run_settings).kernel_for(AttentionCase{}));
  if (kernel != nullptr && kernel->site() == ExecutionSite::cuda_device &&
      cuda_device_status().usable) {
    set_device_coverage(true);
  }
}

// Marks the counters of a case that ran: its shape, its error and the kernel's device coverage.
void mark_counters(const AttentionCase& attention_case, const CaseResult& result) {
  mark_shape_counters(attention_case);
  if (result.ran) mark_error_counter(result.comparison.error_ratio);
  try {
    mark_device_counters(take_device_coverage());  // empty unless a CUDA kernel recorded
  } catch (const std::exception&) {
    // The CUDA context is gone: the case itself has failed or been skipped with the reason.
  }
}

// Prints a failing case with the command that replays its crash file, then aborts, so that
// libFuzzer writes that file.
[[noreturn]] void report_failure(const AttentionCase& attention_case, const CaseResult& result) {
  ReplayCommand replay = replay_command_for(settings());
  replay.replay = "<this crash file>";
  replay.kernel = result.kernel_name;
  replay.plant = result.plant;
  std::cerr << "\n==== attnfuzz: kernel " << result.kernel_name << " failed ====\n"
            << "case: " << case_keys_to_json(attention_case).dump() << "\n"
            << "reason: " << printable_text(result.reason, KeptControls::tab_and_newline) << "\n"
            << "replay: " << replay_command_line(replay) << "\n";
  std::abort();
}

}  // namespace
}  // namespace attnfuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace attnfuzz;
  try {
    settings() = read_settings(*argc, *argv);
  } catch (const HarnessError& error) {
    std::cerr << "fuzz_attention_libfuzzer: error: " << error.what() << "\n";
    std::exit(kExitHarnessError);
  } catch (const std::exception& error) {
    std::cerr << "fuzz_attention_libfuzzer: internal error: " << error.what() << "\n";
    std::exit(kExitHarnessError);
  }
  enable_device_coverage_for(settings());
  std::atexit(print_tally);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnfuzz;
  ++tally.inputs;
  bool fitted = false;
  std::optional<AttentionCase> attention_case = decode_case({data, size}, nullptr, &fitted);
  if (!attention_case) {
    ++tally.not_cases;
    return -1;  // not a case: keep it out of the corpus
  }
  attention_case->id = "fuzz";
  const CaseResult result = CaseRunner(settings()).run(*attention_case);
  mark_counters(*attention_case, result);
  if (fitted) {
    ++tally.fitted;
    mark_fitted_counter();
  }
  if (result.status == CaseStatus::fail) report_failure(*attention_case, result);
  return 0;
}

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

// libFuzzer's own mutation, then its bytes as the case they decode to: what a mutation of a case
// breaks (the magic, the scale, the kernel name's length) is read back as a case, fitted under the
// mutation's work cap, and written in the exact form, so that the input run, and its crash file, is
// that case exactly. (A custom mutator turns libFuzzer's -len_control off: inputs may be as long as
// -max_len, 4096 bytes unless set, from the start; a case's exact form is about 40 to 80 bytes.)
// A case whose exact form is longer than the mutation's max_size (libFuzzer lowers it at times) is
// cut to it, which decodes as a case with the cut fields at their defaults.
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  using namespace attnfuzz;
  size = LLVMFuzzerMutate(data, size, max_size);
  ++tally.mutations;
  bool rewrite = false;
  AttentionCase attention_case = decode_any_bytes({data, size}, nullptr, &rewrite);
  if (seed % kFullCapOneIn != 0 && case_work(attention_case) > kMutationWorkCap) {
    attention_case = fit_to_work_cap(attention_case, kMutationWorkCap);
    rewrite = true;
  }
  if (!rewrite) return size;
  const std::optional<std::vector<std::uint8_t>> bytes = encode_case(attention_case);
  if (!bytes) return size;
  if (bytes->size() > max_size) {
    ++tally.too_long;
    // Cut to at most max_size: an input may stop anywhere after its version, the fields cut off
    // taking their defaults; a cut inside the scale or a kernel's name is no case, so the cut
    // steps back to the longest one that is.
    for (std::size_t cut = max_size; cut >= 4; --cut) {
      if (decode_case({bytes->data(), cut})) {
        ++tally.rewritten;
        std::copy_n(bytes->begin(), cut, data);
        return cut;
      }
    }
    return size;
  }
  ++tally.rewritten;
  std::copy(bytes->begin(), bytes->end(), data);
  return bytes->size();
}
