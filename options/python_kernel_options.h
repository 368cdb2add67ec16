// SPDX-License-Identifier: BSD-3-Clause
// --kernel-py FILE.py:FUNCTION (or MODULE:FUNCTION), --python and --py-framework: a Python function
// as the kernel under test. The Python bridge (bridges/python/) is a plugin of the C ABI that hosts
// CPython; these options find it, check the flags and put what it reads into the environment
// (ATTNFUZZ_KERNEL_PY, ATTNFUZZ_PYTHON, ATTNFUZZ_PY_FRAMEWORK), which the workers, the plugin probe
// and the loaded bridge share. From there on the function is a plugin like any other.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "options/harness_options.h"

namespace attnfuzz {

// Without --kernel-py: nothing (and --python or --py-framework given anyway is an error). With
// it: checks the three flags, sets the environment and returns the bridge plugin's path. Throws
// HarnessError naming the flag: --kernel-lib given too, a spec that is not FILE.py:FUNCTION or
// MODULE:FUNCTION, a missing file, no interpreter, an unknown framework, or a build without the
// bridge.
std::optional<std::string> prepare_kernel_py(const HarnessOptions& options);

// The flags that name the function again in a replay command, as prepare_kernel_py resolved them:
// --kernel-py with an absolute file, --python (the interpreter used, given or found on PATH), and
// --py-framework unless numpy.
std::vector<std::pair<std::string, std::string>> kernel_py_flags_of(const HarnessOptions& options);

}  // namespace attnfuzz
