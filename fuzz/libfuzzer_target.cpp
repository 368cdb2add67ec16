// The coverage-guided engine: libFuzzer's entry points over the shared case model.
//
// Each input is a binary case (fuzz/case_codec.h). The case runs on the kernel under test against
// the float64 oracle; a failing case is printed as JSON with a replay command, then the process
// aborts so that libFuzzer writes the crash file. Beside the instrumented code's own coverage,
// extra counters (libFuzzer's __libfuzzer_extra_counters) mark which shape classes a case hit and
// how large its error was relative to the tolerance, so the fuzzer keeps inputs that reach new
// tail tiles, diagonal positions, GQA ratios and head dims, and climbs toward larger errors. With a
// CUDA kernel, the kernel's own device-side coverage points (kernels/device_coverage.h) are
// copied into extra counters after every case too.
//
//   fuzz_attention_libfuzzer [libFuzzer flags] [--kernel=NAME] [--plant=NAME] [--backend=NAME]
//                            [--kernel-lib=PLUGIN.so] [CORPUS_DIR...]
// The kernel, plant, backend (cpu by default; auto or cuda for the CUDA kernels) and a kernel
// plugin to load come from those flags (libFuzzer ignores flags that start with "--") or from
// ATTNFUZZ_KERNEL, ATTNFUZZ_PLANT, ATTNFUZZ_BACKEND and ATTNFUZZ_KERNEL_LIB.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "fuzz/case_codec.h"
#include "fuzz/case_runner.h"
#include "fuzz/fuzz_counters.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/device_coverage.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "kernels/plugin_kernel.h"

namespace attnfuzz {
namespace {

// Cases above this many score-times-dim products are left to the matrix runs: the fuzzer wants
// many small, fast cases (about a millisecond each).
constexpr std::int64_t kMaxFuzzWork = std::int64_t{1} << 24;

RunSettings& settings() {
  static RunSettings instance;
  return instance;
}

void take_setting(const char* name, const std::string& value) {
  if (std::strcmp(name, "kernel") == 0) settings().kernel = value;
  if (std::strcmp(name, "kernel-lib") == 0) {
    try {
      const AttentionKernel& plugin = load_plugin_kernel(value);
      settings().kernel_lib = value;
      if (settings().kernel.empty()) settings().kernel = std::string(plugin.name());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "fuzz_attention_libfuzzer: --kernel-lib: %s\n", error.what());
      std::exit(3);
    }
  }
  if (std::strcmp(name, "backend") == 0) {
    for (Backend backend : {Backend::auto_select, Backend::cpu, Backend::cuda}) {
      if (backend_name(backend) == value) {
        settings().backend = backend;
        return;
      }
    }
    std::fprintf(stderr, "fuzz_attention_libfuzzer: unknown backend '%s'\n", value.c_str());
    std::exit(3);
  }
  if (std::strcmp(name, "plant") == 0) {
    const std::optional<PlantedBug> plant = parse_planted_bug(value);
    if (!plant) {
      std::fprintf(stderr, "fuzz_attention_libfuzzer: unknown planted bug '%s'\n", value.c_str());
      std::exit(3);
    }
    settings().plant = *plant;
  }
}

}  // namespace
}  // namespace attnfuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace attnfuzz;
  settings().backend = Backend::cpu;
  if (const char* kernel = std::getenv("ATTNFUZZ_KERNEL")) take_setting("kernel", kernel);
  if (const char* plant = std::getenv("ATTNFUZZ_PLANT")) take_setting("plant", plant);
  if (const char* backend = std::getenv("ATTNFUZZ_BACKEND")) take_setting("backend", backend);
  if (const char* library = std::getenv("ATTNFUZZ_KERNEL_LIB")) take_setting("kernel-lib", library);
  for (int index = 1; index < *argc; ++index) {
    const std::string argument = (*argv)[index];
    for (const char* name : {"kernel-lib", "kernel", "plant", "backend"}) {
      const std::string prefix = std::string("--") + name + "=";
      if (argument.rfind(prefix, 0) == 0) take_setting(name, argument.substr(prefix.size()));
    }
  }
  const AttentionKernel* kernel = find_kernel(CaseRunner(settings()).kernel_for(AttentionCase{}));
  if (kernel != nullptr && kernel->site() == ExecutionSite::cuda_device &&
      cuda_device_status().usable) {
    set_device_coverage(true);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnfuzz;
  std::optional<AttentionCase> attention_case = decode_case({data, size});
  if (!attention_case) return -1;  // not a case: keep it out of the corpus
  const std::int64_t work = attention_case->batch * attention_case->heads *
                            attention_case->seq_len_q * attention_case->seq_len_k *
                            attention_case->head_dim;
  if (work > kMaxFuzzWork) return -1;
  attention_case->id = "fuzz";
  const CaseRunner runner(settings());
  mark_shape_counters(*attention_case);
  const CaseResult result = runner.run(*attention_case);
  if (result.ran) mark_error_counter(result.comparison.error_ratio);
  try {
    mark_device_counters(take_device_coverage());  // empty unless a CUDA kernel recorded
  } catch (const std::exception&) {
    // The CUDA context is gone: the case itself has failed or been skipped with the reason.
  }
  if (result.status != CaseStatus::fail) return 0;

  std::cerr << "\n==== attnfuzz: kernel " << result.kernel_name << " failed ====\n"
            << "case: " << case_keys_to_json(*attention_case).dump() << "\n"
            << "reason: " << result.reason << "\n"
            << "replay: fuzz_attention --replay <this crash file>"
            << (settings().kernel_lib.empty() ? std::string()
                                              : " --kernel-lib " + settings().kernel_lib)
            << " --kernel " << result.kernel_name
            << (result.plant != "none" ? " --plant " + result.plant : std::string()) << "\n";
  std::abort();
}
