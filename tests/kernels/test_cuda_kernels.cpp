// SPDX-License-Identifier: BSD-3-Clause
// The CUDA kernels (cuda_flash, cuda_naive). What they declare is checked on every CUDA build;
// running them needs a GPU, and without one those tests report skipped, never passed:
//   - both pass every case of the shipped edge matrix and many random cases against the oracle;
//   - every planted bug of cuda_flash, the GPU-only ones included, fails the edge, variant or fp8
//     matrix;
//   - cuda_flash stages every fp8 pattern as the host decodes it, and passes every fp8 case;
//   - the same input twice gives bitwise identical output (no race in the correct kernel).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "fuzz/case_generator.h"
#include "fuzz/properties.h"
#include "kernels/cuda_device_probe.h"
#include "kernels/cuda_fp8_staging.h"
#include "kernels/device_coverage.h"
#include "kernels/flash_plant_rules.h"
#include "kernels/flash_tile_traits.h"
#include "kernels/kernel_registry.h"
#include "matrix/matrix_file.h"
#include "run/case_runner.h"
#include "support/printers.h"

#if ATTNFUZZ_HAVE_CUDA

namespace attnfuzz {
namespace {

#define ATTNFUZZ_SKIP_WITHOUT_GPU()                                                     \
  if (!cuda_device_status().usable) {                                                   \
    GTEST_SKIP() << "needs a usable CUDA device: " << cuda_device_status().description; \
  }

// `kernel` on the GPU with `plant`; `atomics`: nondeterminism allowed (cuda_flash's atomic dQ).
RunSettings cuda_settings(std::string_view kernel, PlantedBug plant = PlantedBug::none,
                          bool atomics = false) {
  RunSettings settings;
  settings.backend = Backend::cuda;
  settings.kernel = std::string(kernel);
  settings.plant = plant;
  settings.allow_nondeterminism = atomics;
  return settings;
}

CaseResult run_on(std::string_view kernel, const AttentionCase& attention_case,
                  PlantedBug plant = PlantedBug::none) {
  return CaseRunner(cuda_settings(kernel, plant)).run(attention_case);
}

AttentionProblem problem_with_head_dim(std::int64_t head_dim) {
  AttentionCase attention_case;
  attention_case.head_dim = head_dim;
  return problem_of(attention_case);
}

// ---- what the kernels declare: host code, checked on every CUDA build ----

TEST(CudaKernels, AreRegisteredAndRunOnTheDevice) {
  for (const char* name : {"cuda_flash", "cuda_naive"}) {
    const AttentionKernel* kernel = find_kernel(name);
    ASSERT_NE(kernel, nullptr) << name;
    EXPECT_EQ(kernel->site(), ExecutionSite::cuda_device) << name;
  }
}

TEST(CudaFlash, CarriesEveryPlantOfTheCatalogueIncludingTheGpuOnlyOnesButTheHostKernelsBugs) {
  const AttentionKernel& kernel = cuda_flash_kernel();
  for (const PlantedBugInfo& info : kPlantedBugs) {
    // The host kernel's own: inputs written in place, memory and time (fences, memory watch).
    EXPECT_EQ(kernel.carries(info.bug), !info.host_only) << info.name;
  }
  EXPECT_TRUE(kernel.carries(PlantedBug::missing_syncthreads));
  EXPECT_FALSE(cpu_flash_kernel().carries(PlantedBug::missing_syncthreads));
  EXPECT_FALSE(cpu_flash_kernel().carries(PlantedBug::write_past_output_end));
}

TEST(CudaFlash, TakesFp8InputsForwardButNotBackward) {
  AttentionCase fp8_cache;  // an fp8 KV cache, FlashInfer- and vLLM-style
  fp8_cache.k_storage = fp8_cache.v_storage = InputStorage::e4m3;
  fp8_cache.descale = Descale::per_tensor;
  const AttentionProblem problem = problem_of(fp8_cache);
  const AttentionKernel& kernel = *find_kernel("cuda_flash");
  EXPECT_TRUE(kernel.supports(problem).supported) << kernel.supports(problem).reason;
  const SupportVerdict backward = kernel.backward_support(problem);
  EXPECT_FALSE(backward.supported);
  EXPECT_NE(backward.reason.find("fp8"), std::string::npos) << backward.reason;
}

TEST(CudaFlash, SupportsExactlyTheHeadDimsOfTheSharedTileTraits) {
  for (const FlashTileConfig& config : kFlashTileConfigs) {
    EXPECT_TRUE(cuda_flash_kernel().supports(problem_with_head_dim(config.head_dim)).supported)
        << config.head_dim;
  }
  const SupportVerdict verdict = cuda_flash_kernel().supports(problem_with_head_dim(80));
  EXPECT_FALSE(verdict.supported);
  EXPECT_NE(verdict.reason.find("head_dim 80"), std::string::npos) << verdict.reason;
}

TEST(CudaNaive, SupportsAnyHeadDimButSaysWhyALongRowDoesNotFit) {
  EXPECT_TRUE(cuda_naive_kernel().supports(problem_with_head_dim(80)).supported);
  EXPECT_TRUE(cuda_naive_kernel().supports(problem_with_head_dim(1)).supported);
  AttentionCase long_row;
  long_row.seq_len_k = 1 << 20;
  const SupportVerdict verdict = cuda_naive_kernel().supports(problem_of(long_row));
  EXPECT_FALSE(verdict.supported);
  EXPECT_NE(verdict.reason.find("seq_len_k"), std::string::npos) << verdict.reason;
}

TEST(CudaKernels, WithoutAGpuEveryCaseIsSkippedWithTheCudaReason) {
  if (cuda_device_status().usable) GTEST_SKIP() << "this machine has a usable GPU";
  const CaseResult result = run_on("cuda_flash", AttentionCase{});
  EXPECT_EQ(result.status, CaseStatus::skip);
  EXPECT_NE(result.reason.find("CUDA backend unavailable"), std::string::npos) << result.reason;
}

// ---- on the device ----

class CudaKernelOnEdges : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaKernelOnEdges, PassesEveryCaseItSupports) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  int ran = 0;
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const CaseResult result = run_on(GetParam(), attention_case);
    EXPECT_NE(result.status, CaseStatus::fail) << attention_case.id << ": " << result.reason;
    ran += result.status == CaseStatus::pass;
  }
  EXPECT_GT(ran, 100) << "most edge cases must run, not be skipped";
}

TEST_P(CudaKernelOnEdges, IsNeverFlaggedOnRandomCasesOfEveryDistribution) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  const rc::Gen<AttentionCase> generator =
      small_case({.max_seq_len = 300, .distributions = {}, .injections = true});
  for (int index = 0; index < 1000; ++index) {
    const AttentionCase attention_case = generator(rc::Random(index + 1), 50).value();
    const CaseResult result = run_on(GetParam(), attention_case);
    ASSERT_NE(result.status, CaseStatus::fail)
        << describe_case(attention_case) << ": " << result.reason;
  }
}

TEST_P(CudaKernelOnEdges, GivesBitwiseIdenticalOutputForTheSameInputTwice) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  RunSettings settings;
  settings.backend = Backend::cuda;
  settings.kernel = GetParam();
  for (const AttentionCase& attention_case : load_built_in_matrix("edges.json").cases) {
    const std::optional<std::string> failure =
        check_property(Property::determinism, attention_case, settings).failure;
    EXPECT_FALSE(failure.has_value()) << attention_case.id << ": " << failure.value_or("");
  }
}

INSTANTIATE_TEST_SUITE_P(Both, CudaKernelOnEdges, ::testing::Values("cuda_flash", "cuda_naive"));

TEST(CudaFlash, RecordsDeviceCoverageOnlyWhileSwitchedOn) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  AttentionCase masked_rows;  // causal, seq_len_q > seq_len_k: the first 90 rows see no key
  masked_rows.seq_len_q = 203;
  masked_rows.seq_len_k = 113;
  masked_rows.causal = true;
  run_on("cuda_flash", masked_rows);
  EXPECT_TRUE(take_device_coverage().empty()) << "off by default";

  set_device_coverage(true);
  run_on("cuda_flash", masked_rows);
  const std::vector<std::uint8_t> points = take_device_coverage();
  set_device_coverage(false);
  ASSERT_EQ(points.size(), static_cast<std::size_t>(kDeviceCoverageCount));
  const auto hit = [&](DeviceCoveragePoint point) { return points[static_cast<int>(point)] != 0; };
  EXPECT_TRUE(hit(DeviceCoveragePoint::partial_query_tile));
  EXPECT_TRUE(hit(DeviceCoveragePoint::partial_key_tile));
  EXPECT_TRUE(hit(DeviceCoveragePoint::causal_tile_empty));
  EXPECT_TRUE(hit(DeviceCoveragePoint::fully_masked_row));
  EXPECT_TRUE(hit(DeviceCoveragePoint::causal_diagonal_tile));
  EXPECT_FALSE(hit(DeviceCoveragePoint::shared_kv_head));
  EXPECT_FALSE(hit(DeviceCoveragePoint::output_nonfinite));
}

class CudaFlashPlant : public ::testing::TestWithParam<PlantedBugInfo> {};

TEST_P(CudaFlashPlant, FailsTheEdgeTheVariantsOrTheFp8Matrix) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  if (GetParam().detector == PlantDetector::racecheck) {
    GTEST_SKIP() << GetParam().name << " is a race: compute-sanitizer racecheck is its detector "
                 << "(ctest cuda_flash.racecheck_finds_missing_syncthreads)";
  }
  if (GetParam().host_only) {
    GTEST_SKIP() << GetParam().name << " is planted in the host kernel only";
  }
  if (GetParam().detector == PlantDetector::timing) {
    GTEST_SKIP() << GetParam().name << " leaves the outputs as they are: the performance gate "
                 << "is its detector";
  }
  if (GetParam().detector == PlantDetector::backward) {
    GTEST_SKIP() << GetParam().name << " is a bug of the backward pass: CudaFlashBackwardPlant";
  }
  int failed = 0;
  for (const char* matrix : {"edges.json", "variants.json", "fp8.json"}) {
    for (const AttentionCase& attention_case : load_built_in_matrix(matrix).cases) {
      failed += run_on("cuda_flash", attention_case, GetParam().bug).status == CaseStatus::fail;
    }
  }
  EXPECT_GT(failed, 0) << GetParam().name << " was not caught by any edge, variant or fp8 case";
}

// The backward pass (kernels/cuda_flash_backward.cu) on every case of backward.json, its dQ summed
// in order and, with nondeterminism allowed, added atomically by the key tiles.
TEST(CudaFlash, ItsBackwardPassesTheBackwardMatrixWithDqInOrderAndByAtomics) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  for (const bool atomics : {false, true}) {
    const RunSettings settings = cuda_settings("cuda_flash", PlantedBug::none, atomics);
    for (const AttentionCase& attention_case : load_built_in_matrix("backward.json").cases) {
      const CaseResult result = CaseRunner(settings).run(attention_case);
      EXPECT_EQ(result.status, CaseStatus::pass)
          << attention_case.id << (atomics ? " (atomics): " : ": ") << result.reason;
    }
  }
}

class CudaFlashBackwardPlant : public ::testing::TestWithParam<PlantedBugInfo> {};

TEST_P(CudaFlashBackwardPlant, FailsTheBackwardMatrixWithDqInOrderAndByAtomics) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  for (const bool atomics : {false, true}) {
    const RunSettings settings = cuda_settings("cuda_flash", GetParam().bug, atomics);
    int failed = 0;
    for (const AttentionCase& attention_case : load_built_in_matrix("backward.json").cases) {
      failed += CaseRunner(settings).run(attention_case).status == CaseStatus::fail;
    }
    EXPECT_GT(failed, 0) << GetParam().name << " was not caught by any backward case"
                         << (atomics ? " (atomics)" : "");
  }
}

std::vector<PlantedBugInfo> backward_plants() {
  std::vector<PlantedBugInfo> plants;
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (info.detector == PlantDetector::backward) plants.push_back(info);
  }
  return plants;
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, CudaFlashBackwardPlant, ::testing::ValuesIn(backward_plants()),
                         [](const auto& info) { return std::string(info.param.name); });

// Every variant, the split-KV decode path among them (variants.json's paged decode steps of 1000
// and 4097 keys), as cpu_flash runs them.
TEST(CudaFlash, PassesEveryVariantCase) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  for (const AttentionCase& attention_case : load_built_in_matrix("variants.json").cases) {
    const CaseResult result = run_on("cuda_flash", attention_case, PlantedBug::none);
    EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
  }
}

// fp8 inputs, as FlashAttention 3 and fp8 KV caches hand them: decoded as the tiles are staged.
TEST(CudaFlash, PassesEveryFp8Case) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  for (const AttentionCase& attention_case : load_built_in_matrix("fp8.json").cases) {
    const CaseResult result = run_on("cuda_flash", attention_case, PlantedBug::none);
    EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
  }
}

// Every pattern of both formats, staged on the device into both element dtypes, is the host's
// decoding of it, exactly (NaN as NaN); and under the two plants that misread patterns, it is
// what cpu_flash reads.
TEST(CudaFlash, StagesEveryFp8PatternAsTheHostDecodesIt) {
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  for (const Dtype stored : {Dtype::e4m3, Dtype::e5m2}) {
    for (const Dtype element : {Dtype::fp16, Dtype::bf16}) {
      for (const PlantedBug plant : {PlantedBug::none, PlantedBug::fp8_e5m2_read_as_e4m3,
                                     PlantedBug::fp8_subnormals_as_normals}) {
        const std::vector<std::uint16_t> staged =
            cuda_flash_staged_fp8_elements(stored, element, plant);
        ASSERT_EQ(staged.size(), 256u);
        const std::span<const float> host = widening_table(decoded_as(stored, plant));
        for (std::uint16_t pattern = 0; pattern < 256; ++pattern) {
          const float expected = host[fp8_pattern_read_as(pattern, stored, plant)];
          const float got = dtype_to_float(staged[pattern], element);
          if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(got)) << dtype_name(stored) << " pattern " << pattern;
          } else {
            EXPECT_EQ(got, expected) << dtype_name(stored) << " pattern " << pattern << " as "
                                     << dtype_name(element) << " under " << planted_bug_name(plant);
          }
        }
      }
    }
  }
}

TEST(CudaFlash, PassesTheSeedsLargeCasesJudgedByTheCublasOracle) {
  // Above the device oracle's threshold: the float64 reference comes from cuBLAS, and the
  // comparison reads every array of it (a field the cuBLAS oracle left unsized crashed the worker).
  ATTNFUZZ_SKIP_WITHOUT_GPU();
  const std::vector<AttentionCase> cases = load_built_in_matrix("seed27.json").cases;
  for (std::size_t index : {std::size_t{0}, cases.size() - 1}) {
    AttentionCase attention_case = cases.at(index);
    for (const bool causal : {false, true}) {
      attention_case.causal = causal;
      const CaseResult result = run_on("cuda_flash", attention_case, PlantedBug::none);
      EXPECT_EQ(result.status, CaseStatus::pass) << attention_case.id << ": " << result.reason;
      EXPECT_EQ(result.oracle, "cuda_cublas_float64") << attention_case.id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPlant, CudaFlashPlant, ::testing::ValuesIn(kPlantedBugs),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnfuzz

#endif  // ATTNFUZZ_HAVE_CUDA
