// SPDX-License-Identifier: BSD-3-Clause
#include "cli/kernel_setup.h"

#include <sys/wait.h>

#include <ostream>
#include <string_view>

#include "cli/case_run_options.h"
#include "core/exit_codes.h"
#include "core/harness_error.h"
#include "core/text.h"
#include "kernels/kernel_registry.h"
#include "kernels/planted_bug.h"
#include "options/run_settings_options.h"
#include "run/child_process.h"

namespace attnfuzz {
namespace {

// Marks a plant of speed in --list-kernels (scripts that count killed plants leave these out).
constexpr std::string_view kTimingPlantTag =
    " [a slowdown, not a wrong value: found by --bench with --against-plant none or --baseline]";
constexpr std::string_view kBackwardPlantTag =
    " [a bug of the backward pass: the forward's output is unchanged, its gradients are wrong]";

std::string_view plant_tag(PlantDetector detector) {
  if (detector == PlantDetector::timing) return kTimingPlantTag;
  if (detector == PlantDetector::backward) return kBackwardPlantTag;
  return "";
}

// How long a plugin may take to load (its constructors and attnfuzz_plugin_* queries) in the probe.
constexpr double kPluginProbeSeconds = 120.0;

// A plugin is loaded first in a child process (fuzz_attention --probe-plugin), so that one whose
// constructor, abi_version, name or site crashes, hangs or exits costs that child, and the run
// ends with exit 3 naming the file instead of dying with SIGSEGV and no word.
// The child is handed the plugin as `loaded_as` hands it to this process: --kernel-lib (a
// --kernel-py bridge too) or --against-lib (which loads it as a reference would be).
void probe_plugin(const KernelSource& source, const char* loaded_as, const char* argv0) {
  const ChildRun probe = run_child(
      {self_executable(argv0), "--probe-plugin", loaded_as, source.plugin}, kPluginProbeSeconds);
  if (!probe.timed_out && WIFEXITED(probe.wait_status) &&
      WEXITSTATUS(probe.wait_status) == kExitPass) {
    return;
  }
  std::string output = printable_text(probe.output, KeptControls::tab_and_newline);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  const std::string prefix = "fuzz_attention: error: ";
  if (WIFEXITED(probe.wait_status) && WEXITSTATUS(probe.wait_status) == kExitHarnessError &&
      output.rfind(prefix, 0) == 0 && output.find('\n') == std::string::npos) {
    throw HarnessError(output.substr(prefix.size()));  // the loader's own message
  }
  throw HarnessError(
      source.named + ": loading the plugin " +
      (probe.timed_out
           ? "did not finish within " + std::to_string(int(kPluginProbeSeconds)) + " s"
           : "in a child process, that process " + describe_wait_status(probe.wait_status)) +
      " (its constructors or attnfuzz_plugin_abi_version/name/site); nothing was run" +
      (output.empty() ? "" : "; its output:\n" + output));
}

}  // namespace

PluginKernels set_up_kernels(const HarnessOptions& options, const char* argv0) {
  apply_thread_count(options.threads);
  // Flags that cannot go together, refused before anything is loaded (the probe is handed only its
  // plugin's flag).
  if (!options.probe_plugin) bench_settings_of(options);
  const KernelSource source = kernel_source_of(options);
  const bool probe = !options.worker && !options.probe_plugin;
  if (!source.plugin.empty() && probe) probe_plugin(source, "--kernel-lib", argv0);
  if (!options.against_lib.empty() && probe) {
    probe_plugin({options.against_lib, "--against-lib", "--against-lib " + options.against_lib},
                 "--against-lib", argv0);
  }
  PluginKernels kernels;
  kernels.kernel = load_kernel_source(source);
  kernels.reference = load_reference_plugin(options);
  return kernels;
}

void list_kernels(std::ostream& out) {
  for (const AttentionKernel* kernel : all_kernels()) {
    out << kernel->name() << " ("
        << (kernel->site() == ExecutionSite::host ? "host" : "CUDA device")
        << "): " << kernel->summary() << "\n  supports: " << kernel->capabilities()
        << "\n  plants:" << (kernel->plants().empty() ? " none\n" : "\n");
    for (PlantedBug plant : kernel->plants()) {
      const PlantedBugInfo& info = planted_bug_info(plant);
      out << "    " << info.name << ": " << info.effect << " (" << info.origin << ")"
          << plant_tag(info.detector) << "\n";
    }
  }
}

}  // namespace attnfuzz
