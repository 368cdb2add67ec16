// SPDX-License-Identifier: BSD-3-Clause
// What running a case found, before the verdict: the kernel's error or the inputs it changed, the
// writes outside its output, a repeat that differed, the oracle's comparison. The host path
// (case_runner.cpp) and the device path (run/device_case.h) both gather it; the case runner turns
// it into one verdict the same way for both.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "oracle/tolerance.h"
#include "run/kernel_inputs.h"

namespace attnfuzz {

// The float64 references a case may be judged by, as reports name them.
inline constexpr std::string_view kCpuOracle = "cpu_float64";
inline constexpr std::string_view kCudaOracle = "cuda_cublas_float64";

struct CaseEvidence {
  KernelCall first_call;  // the first run: an error ends the case there
  std::optional<std::string> stray_write;
  std::optional<std::string> repeat_fault;  // the first repeat that failed, numbered
  std::string oracle;                       // which reference judged, e.g. "cpu_float64"
  std::string oracle_failure;               // why the oracle could not judge (it threw); else empty
  Comparison comparison;  // every run judged when nondeterminism is allowed: the worst
};

}  // namespace attnfuzz
