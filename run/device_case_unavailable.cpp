// SPDX-License-Identifier: BSD-3-Clause
// A build without CUDA: every case runs on the host path.
#include <stdexcept>

#include "run/device_case.h"

namespace attnfuzz {

bool runs_whole_on_device(const AttentionProblem&, const AttentionKernel&, const RunSettings&) {
  return false;
}

CaseEvidence run_case_on_device(const AttentionKernel&, const AttentionProblem&,
                                const AttentionCase&, const RunSettings&, CaseTiming&) {
  throw std::runtime_error("a case on the device needs CUDA, and this build has none");
}

}  // namespace attnfuzz
