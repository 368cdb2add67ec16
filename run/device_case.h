// SPDX-License-Identifier: BSD-3-Clause
// A whole case on the CUDA device, for a kernel that runs there: the inputs drawn on the device
// (case/device_inputs.h; drawn on the host and copied when the device generator does not cover the
// case), the kernel handed copies of them and a poisoned output, the determinism rerun, the checks
// that the inputs are unchanged and that nothing was written outside the output, the float64
// oracle (cuBLAS), the plain reference and the comparison, all on the device. Only the rows'
// checks come back; a check that finds something copies the buffers concerned to the host and lets
// the host's code (find_changed_input, find_stray_write, find_repeat_difference) describe it, so
// that a report says what the host path would say. Device memory is kept from case to case.
#pragma once

#include "case/attention_case.h"
#include "kernels/attention_kernel.h"
#include "run/case_evidence.h"
#include "run/case_runner.h"
#include "run/case_timing.h"

namespace attnfuzz {

// Whether `problem` runs on the device path with these settings: a kernel on a CUDA device, neither
// the checks (--host-verification) nor the oracle (--oracle cpu) asked for on the host, dense
// attention (what the cuBLAS oracle, the device's plain reference and comparison take) under the
// default numerics. The others run on the host path.
bool runs_whole_on_device(const AttentionProblem& problem, const AttentionKernel& kernel,
                          const RunSettings& settings);

// Runs the case (runs_whole_on_device holds), its time per step into `timing`.
CaseEvidence run_case_on_device(const AttentionKernel& kernel, const AttentionProblem& problem,
                                const AttentionCase& attention_case, const RunSettings& settings,
                                CaseTiming& timing);

}  // namespace attnfuzz
