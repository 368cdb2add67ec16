// SPDX-License-Identifier: BSD-3-Clause
// A build without CUDA: the device comparison cannot run.
#include <stdexcept>

#include "oracle/device_comparison.h"

namespace attnfuzz {

Comparison compare_rows_on_device(const AttentionProblem&, const DeviceReferenceView&,
                                  const std::uint16_t*, const float*, double,
                                  const DeclaredNumerics&) {
  throw std::runtime_error("the device comparison needs CUDA, and this build has none");
}

Comparison compare_on_device(const AttentionProblem&, const ReferenceAttention&,
                             const std::vector<float>&, const std::uint16_t*, std::size_t,
                             const DeclaredNumerics&) {
  throw std::runtime_error("the device comparison needs CUDA, and this build has none");
}

}  // namespace attnfuzz
