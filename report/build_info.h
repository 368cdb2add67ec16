// SPDX-License-Identifier: BSD-3-Clause
// Where and how this run happens: the build, the machine and the locked numerics, for reports.
#pragma once

#include "report/run_report.h"

namespace attnfuzz {

RunEnvironment describe_environment(std::string_view backend);

// fuzz_attention --version: the version, git commit, build type and compiler, the CUDA runtime
// (and device, if any) and the cuBLAS library, one per line.
std::string version_text();

}  // namespace attnfuzz
