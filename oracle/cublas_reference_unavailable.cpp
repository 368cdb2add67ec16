// SPDX-License-Identifier: BSD-3-Clause
// The cuBLAS oracle in a build without CUDA: every call says why it cannot run.
#include <stdexcept>

#include "oracle/cublas_reference.h"

namespace attnfuzz {

namespace {
constexpr const char* kNoCuda =
    "this build has no CUDA support (nvcc was not found at configure time)";
}

ReferenceAttention cublas_reference_attention(const AttentionProblem&, const AttentionTensors&) {
  throw std::runtime_error(std::string("cuBLAS oracle: ") + kNoCuda);
}

std::string cublas_library_version() {
  return std::string("no cuBLAS: ") + kNoCuda;
}

std::string cublas_description() {
  return std::string("cuBLAS oracle unavailable: ") + kNoCuda;
}

}  // namespace attnfuzz
