// Runs one case end to end: picks the kernel, checks it can run here, generates the inputs,
// runs the kernel on a poisoned and fenced output, computes the oracle, and judges.
#pragma once

#include <string>

#include "fuzz/case_result.h"
#include "kernels/attention_kernel.h"

namespace attnfuzz {

enum class Backend { auto_select, cpu, cuda };

struct RunSettings {
  Backend backend = Backend::auto_select;
  std::string kernel;  // overrides every case's kernel when set
  PlantedBug plant = PlantedBug::none;
};

std::string_view backend_name(Backend backend);

class CaseRunner {
 public:
  explicit CaseRunner(RunSettings settings);

  // Throws HarnessError when the case names an unknown kernel or one without the planted bug.
  void validate(const AttentionCase& attention_case) const;

  CaseResult run(const AttentionCase& attention_case) const;

  // The kernel a case runs on under these settings (may not exist in this build: cuda_flash).
  std::string kernel_for(const AttentionCase& attention_case) const;

 private:
  RunSettings settings_;
};

}  // namespace attnfuzz
