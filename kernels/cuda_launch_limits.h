// SPDX-License-Identifier: BSD-3-Clause
// Launch limits of CUDA grids, named once: cuda_naive refuses the problems past them, cuda_flash
// launches such problems in chunks under them, and the plants of flash_plant_rules.h drop the work
// past them, as a kernel that clamps its grid to them does.
#pragma once

#include <cstdint>

namespace attnfuzz {

// Grid dimensions y and z (heads, batch in our kernels) are limited to 65535 on every
// architecture; only x reaches 2^31 - 1.
inline constexpr std::int64_t kMaxGridYZ = 65535;

}  // namespace attnfuzz
