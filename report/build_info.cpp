// SPDX-License-Identifier: BSD-3-Clause
#include "report/build_info.h"

#include <fstream>
#include <string>

#include "core/parallel_for.h"
#include "kernels/cuda_device_probe.h"
#include "oracle/cublas_reference.h"
#include "oracle/reference_attention.h"

namespace attnfuzz {
namespace {

std::string host_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

}  // namespace

std::string version_text() {
  return std::string("fuzz_attention ") + ATTNFUZZ_VERSION +
         "\ngit commit: " + ATTNFUZZ_GIT_COMMIT + "\nbuild: " + ATTNFUZZ_BUILD_TYPE + ", " +
         ATTNFUZZ_COMPILER + "\nCUDA: " + cuda_device_status().description + "\n" +
         cublas_library_version() + "\nBLAS: " + blas_description() + "\n";
}

RunEnvironment describe_environment(std::string_view backend) {
  RunEnvironment environment;
  environment.harness_version = ATTNFUZZ_VERSION;
  environment.git_commit = ATTNFUZZ_GIT_COMMIT;
  environment.compiler = ATTNFUZZ_COMPILER;
  environment.build_type = ATTNFUZZ_BUILD_TYPE;
  environment.host_cpu = host_cpu_model();
  environment.threads = default_thread_count();
  environment.blas = blas_description();
  environment.backend = std::string(backend);
  environment.cuda = cuda_device_status().description;
  environment.numerics = {
      {"inputs", "fp16/bf16, generated in double and rounded to nearest even"},
      {"kernel_accumulation", "fp32 for QK^T and PV; P rounded to the input dtype before PV"},
      {"oracle", "float64 from the exact input values (OpenBLAS DGEMM), masked rows give 0"},
      {"tf32",
       "never used: CPU kernels and oracle compute in fp32/float64; CUDA kernels use "
       "fp16/bf16 mma.sync with fp32 accumulators; the cuBLAS oracle is FP64 only"},
      {"device_oracle",
       cuda_device_status().usable ? cublas_description() : "none (no usable CUDA device)"},
      {"tolerance", "derived per-element bound and FlashAttention's 2x rule (docs/tolerance.md)"},
      {"seeds", "per case; each tensor its own counter-based stream of (seed, shape, tensor)"},
  };
  return environment;
}

}  // namespace attnfuzz
