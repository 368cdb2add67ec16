// SPDX-License-Identifier: BSD-3-Clause
// Launch limits of CUDA that the CUDA kernels' grids run into, so that each kernel's supports()
// refuses the problems it cannot launch, and names the limit the same way.
#pragma once

#include <cstdint>

namespace attnfuzz {

// Grid dimensions y and z (heads, batch in our kernels) are limited to 65535 on every
// architecture; only x reaches 2^31 - 1.
inline constexpr std::int64_t kMaxGridYZ = 65535;

}  // namespace attnfuzz
