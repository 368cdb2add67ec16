// SPDX-License-Identifier: BSD-3-Clause
// What the kernel under test can run, asked before the search draws: its supports() on small
// cases, one per head dim and dtype the generator draws, with and without grouped heads, and each
// attention variant in each form the generator draws it (a kernel that runs pages of 256 only, or
// key-side varlen only, is still offered the feature). The search then draws only those
// (KernelReach, fuzz/case_generator.h): a kernel that declares no variant (a version 1 plugin) is
// offered no variant case, one without head dim 80 no such case, and the budget goes to cases it
// runs. A kernel that can run nothing here (no GPU) reaches everything: its cases are skipped, each
// with its reason, as before. The property search asks it in a worker when its checks run in one
// (ContainedPropertyCheck::reach), so that a supports() that crashes or hangs is contained too.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/case_generator.h"
#include "run/case_runner.h"

namespace attnfuzz {

KernelReach probe_kernel_reach(const CaseRunner& runner);

// One line naming what the search leaves out, e.g. "head dims 80 160 192 16, dtype bf16, grouped
// heads (GQA, MQA)" followed by the name of each variant left out; empty when it draws everything.
std::string describe_unreached(const KernelReach& reach);

// The reach as a worker answers it, and back.
nlohmann::json kernel_reach_to_json(const KernelReach& reach);
KernelReach kernel_reach_from_json(const nlohmann::json& json);

}  // namespace attnfuzz
