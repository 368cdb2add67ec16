// SPDX-License-Identifier: BSD-3-Clause
#include "options/python_kernel_options.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "core/harness_error.h"
#include "run/child_process.h"

namespace attnfuzz {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFrameworks[] = {"numpy", "torch", "jax"};
// How long the interpreter may take to say its version (a cold start of a large environment).
constexpr double kPythonProbeSeconds = 60.0;

// The first executable file `name` on PATH, absolute; empty when there is none.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const fs::path folder(std::string(rest.substr(0, colon)));
    rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    std::error_code error;
    const fs::path candidate = fs::absolute(folder.empty() ? fs::path(".") : folder, error) / name;
    const auto status = fs::status(candidate, error);
    if (!error && fs::is_regular_file(status) &&
        (status.permissions() & fs::perms::owner_exec) != fs::perms::none) {
      return candidate.string();
    }
  }
  return "";
}

// The bridge plugin: beside this executable (a build folder), in the installation's library
// folder, or where this build made it.
std::string find_bridge() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  std::vector<fs::path> candidates;
  if (!error) {
    candidates.push_back(executable.parent_path() / "libattnfuzz_python.so");
    candidates.push_back(executable.parent_path().parent_path() / ATTNFUZZ_INSTALL_LIBDIR /
                         "attnfuzz" / "libattnfuzz_python.so");
  }
#ifdef ATTNFUZZ_PYTHON_BRIDGE_BUILD_PATH
  candidates.emplace_back(ATTNFUZZ_PYTHON_BRIDGE_BUILD_PATH);
#endif
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  return "";
}

}  // namespace

std::optional<std::string> prepare_kernel_py(const HarnessOptions& options) {
  if (options.kernel_py.empty()) {
    if (!options.python.empty()) throw HarnessError("--python goes with --kernel-py");
    if (options.py_framework != "numpy") throw HarnessError("--py-framework goes with --kernel-py");
    return std::nullopt;
  }
  if (!options.kernel_lib.empty()) {
    throw HarnessError("--kernel-py and --kernel-lib: one kernel source at a time");
  }
  const std::string& spec = options.kernel_py;
  const std::size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    throw HarnessError(
        "--kernel-py " + spec +
        ": expected FILE.py:FUNCTION or MODULE:FUNCTION (e.g. my_attention.py:forward)");
  }
  std::string source = spec.substr(0, colon);
  const bool is_file = source.ends_with(".py") || source.find('/') != std::string::npos;
  if (is_file && !source.ends_with(".py")) {
    throw HarnessError("--kernel-py " + spec + ": a file must end in .py (a module is a.b.c)");
  }
  if (is_file) {
    std::error_code error;
    const fs::path file = fs::absolute(source, error);
    if (error || !fs::is_regular_file(file, error)) {
      throw HarnessError("--kernel-py " + spec + ": no such file: " + file.string());
    }
    source = file.string();  // the workers may start elsewhere
  }
  bool known_framework = false;
  for (std::string_view framework : kFrameworks)
    known_framework |= options.py_framework == framework;
  if (!known_framework) {
    throw HarnessError("--py-framework " + options.py_framework + ": numpy, torch or jax");
  }
  std::string python = options.python;
  if (python.empty()) {
    python = find_on_path("python3");
    if (python.empty()) throw HarnessError("--kernel-py: no python3 on PATH (or give --python)");
  } else {
    std::error_code error;
    python = fs::absolute(python, error).string();  // not canonical: a venv's python is a link
    if (!fs::exists(python, error))
      throw HarnessError("--python " + options.python + ": no such file");
  }
  // The bridge links one libpython; another version's packages are not its to import.
  const ChildRun version = run_child(
      {python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"}, kPythonProbeSeconds);
  std::string found = version.output;
  while (!found.empty() && (found.back() == '\n' || found.back() == '\r')) found.pop_back();
  if (version.timed_out || !WIFEXITED(version.wait_status) ||
      WEXITSTATUS(version.wait_status) != 0) {
    throw HarnessError(
        "--python " + python + ": could not be run (" +
        (version.timed_out ? "no answer" : describe_wait_status(version.wait_status)) + ")");
  }
#ifdef ATTNFUZZ_PYTHON_BRIDGE_VERSION
  if (found != ATTNFUZZ_PYTHON_BRIDGE_VERSION) {
    throw HarnessError("--python " + python + " is Python " + found +
                       "; this build's bridge embeds Python " ATTNFUZZ_PYTHON_BRIDGE_VERSION
                       ": give --python an interpreter (or a virtual environment) of that version");
  }
#endif
  const std::string bridge = find_bridge();
  if (bridge.empty()) {
    throw HarnessError(
        "--kernel-py: this build has no Python bridge (Python 3's development files, Debian's "
        "python3-dev, were not found when it was built)");
  }
  setenv("ATTNFUZZ_KERNEL_PY", (source + spec.substr(colon)).c_str(), 1);
  setenv("ATTNFUZZ_PYTHON", python.c_str(), 1);
  setenv("ATTNFUZZ_PY_FRAMEWORK", options.py_framework.c_str(), 1);
  return bridge;
}

std::vector<std::pair<std::string, std::string>> kernel_py_flags_of(const HarnessOptions& options) {
  std::vector<std::pair<std::string, std::string>> flags;
  if (options.kernel_py.empty()) return flags;
  // As prepare_kernel_py resolved them (an absolute file, the interpreter PATH gave): a replay from
  // another folder, or with another PATH, runs the same function in the same environment.
  const auto resolved = [](const char* variable, const std::string& given) {
    const char* value = std::getenv(variable);
    return value != nullptr && *value != '\0' ? std::string(value) : given;
  };
  flags.emplace_back("--kernel-py", resolved("ATTNFUZZ_KERNEL_PY", options.kernel_py));
  const std::string python = resolved("ATTNFUZZ_PYTHON", options.python);
  if (!python.empty()) flags.emplace_back("--python", python);
  if (options.py_framework != "numpy") flags.emplace_back("--py-framework", options.py_framework);
  return flags;
}

}  // namespace attnfuzz
