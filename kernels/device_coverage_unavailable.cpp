// SPDX-License-Identifier: BSD-3-Clause
// Device coverage in a build without CUDA: there is no device kernel to record anything.
#include "kernels/device_coverage.h"

namespace attnfuzz {

void set_device_coverage(bool) {}

std::vector<std::uint8_t> take_device_coverage() {
  return {};
}

}  // namespace attnfuzz
