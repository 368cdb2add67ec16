// SPDX-License-Identifier: BSD-3-Clause
// The whole case on the device (run/device_case.h) judges as the host path does with the same
// oracle and plain reference (--oracle cuda --host-verification): the same status, the same
// reason word for word (first failing element included) and the same error ratio to 1e-9, on
// every dense case of pr.json with the correct cuda_flash, and on edges.json's dense cases with
// each of its planted bugs that a comparison, the guards or the determinism check can see. Needs a
// GPU; without one it reports skipped, and which cases take the device path is checked everywhere.
#include "run/device_case.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda_device_probe.h"
#include "kernels/kernel_registry.h"
#include "matrix/matrix_file.h"

namespace attnfuzz {
namespace {

RunSettings settings_for(PlantedBug plant, bool host_verification) {
  RunSettings settings;
  settings.kernel = "cuda_flash";
  settings.oracle = OracleChoice::cuda;
  settings.plant = plant;
  settings.host_verification = host_verification;
  return settings;
}

// Runs `attention_case` both ways; true when the device path ran it and both agree.
void expect_paths_agree(const AttentionCase& attention_case, PlantedBug plant,
                        CaseStatus* status = nullptr) {
  const CaseResult device = CaseRunner(settings_for(plant, false)).run(attention_case);
  const CaseResult host = CaseRunner(settings_for(plant, true)).run(attention_case);
  SCOPED_TRACE(attention_case.id + " with " + std::string(planted_bug_name(plant)));
  EXPECT_EQ(device.status, host.status);
  EXPECT_EQ(device.reason, host.reason);
  EXPECT_EQ(device.oracle, host.oracle);
  const double host_ratio = host.comparison.error_ratio;
  if (std::isfinite(host_ratio)) {
    EXPECT_LE(std::fabs(device.comparison.error_ratio - host_ratio), 1e-9 * host_ratio)
        << device.comparison.error_ratio << " vs " << host_ratio;
  } else {
    EXPECT_EQ(std::isnan(device.comparison.error_ratio), std::isnan(host_ratio));
  }
  if (status != nullptr) *status = host.status;
}

std::vector<AttentionCase> dense_cases(const char* matrix) {
  const AttentionKernel& kernel = *find_kernel("cuda_flash");
  std::vector<AttentionCase> dense;
  for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
    if (!attention_case.backward &&  // the forward's two paths are compared; the backward has one
        runs_whole_on_device(problem_of(attention_case), kernel, settings_for({}, false))) {
      dense.push_back(attention_case);
    }
  }
  return dense;
}

TEST(CudaDeviceCase, JudgesEveryDenseCaseOfPrJsonAsTheHostPathDoes) {
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  const std::vector<AttentionCase> cases = dense_cases("pr.json");
  ASSERT_GT(cases.size(), 100u);
  for (const AttentionCase& attention_case : cases) {
    expect_paths_agree(attention_case, PlantedBug::none);
  }
}

// Each plant on edges.json's dense cases until its first failing one (what --fail-fast reports),
// both ways, or for at most kCasesPerPlant cases: a plant of a variant fails none of them.
TEST(CudaDeviceCase, JudgesEveryPlantAsTheHostPathDoes) {
  if (!cuda_device_status().usable) {
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description;
  }
  constexpr std::size_t kCasesPerPlant = 40;
  const AttentionKernel& kernel = *find_kernel("cuda_flash");
  const std::vector<AttentionCase> cases = dense_cases("edges.json");
  int found = 0;
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (!kernel.carries(info.bug) || info.detector == PlantDetector::containment ||
        info.detector == PlantDetector::timing || info.detector == PlantDetector::backward) {
      continue;
    }
    for (std::size_t index = 0; index < std::min(cases.size(), kCasesPerPlant); ++index) {
      CaseStatus status = CaseStatus::pass;
      expect_paths_agree(cases[index], info.bug, &status);
      if (status == CaseStatus::fail) {
        ++found;
        break;
      }
    }
  }
  EXPECT_GE(found, 10) << "the dense plants (tiles, masks, softmax, scale, GQA, ...) are found";
}

TEST(DeviceCase, TakesDenseCasesOfDeviceKernelsUnlessTheHostIsAskedFor) {
  const AttentionKernel* cuda = find_kernel("cuda_flash");
  const AttentionKernel* cpu = find_kernel("cpu_flash");
  if (cuda == nullptr) GTEST_SKIP() << "this build has no CUDA kernels";
  AttentionCase dense;
  dense.seq_len_q = dense.seq_len_k = 64;
  const AttentionProblem problem = problem_of(dense);
  EXPECT_TRUE(runs_whole_on_device(problem, *cuda, settings_for({}, false)));
  EXPECT_FALSE(runs_whole_on_device(problem, *cuda, settings_for({}, true)));
  EXPECT_FALSE(runs_whole_on_device(problem, *cpu, settings_for({}, false)));
  RunSettings cpu_oracle = settings_for({}, false);
  cpu_oracle.oracle = OracleChoice::cpu;
  EXPECT_FALSE(runs_whole_on_device(problem, *cuda, cpu_oracle));
  AttentionCase with_lse = dense;
  with_lse.return_lse = true;
  EXPECT_FALSE(runs_whole_on_device(problem_of(with_lse), *cuda, settings_for({}, false)))
      << "a variant goes the host path";
}

}  // namespace
}  // namespace attnfuzz
