// SPDX-License-Identifier: BSD-3-Clause
// A build without CUDA: the plain reference is computed on the host only.
#include <stdexcept>

#include "oracle/device_plain_attention.h"

namespace attnfuzz {

bool device_plain_attention_supports(const AttentionProblem&, const DeclaredNumerics&) {
  return false;
}

std::vector<float> device_plain_attention(const AttentionProblem&, const AttentionTensors&) {
  throw std::runtime_error("the plain reference on the device needs CUDA, and this build has none");
}

}  // namespace attnfuzz
