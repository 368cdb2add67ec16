// SPDX-License-Identifier: BSD-3-Clause
// The CUDA input generator in a build without CUDA: it covers no case, so every caller generates on
// the host (generate_inputs()).
#include "case/device_inputs.h"

namespace attnfuzz {

struct DeviceInputs::Arena {};

DeviceInputs::DeviceInputs() = default;
DeviceInputs::~DeviceInputs() = default;
DeviceInputs::DeviceInputs(DeviceInputs&&) noexcept = default;
DeviceInputs& DeviceInputs::operator=(DeviceInputs&&) noexcept = default;

const std::uint16_t* DeviceInputs::data(TensorRole) const {
  return nullptr;
}

std::size_t DeviceInputs::size(TensorRole) const {
  return 0;
}

std::vector<std::uint16_t> DeviceInputs::copy_to_host(TensorRole) const {
  return {};
}

bool generate_inputs_on_device(const AttentionProblem&, DataDistribution, std::uint64_t,
                               const SpecialValueInjection&, DeviceInputs&) {
  return false;
}

}  // namespace attnfuzz
