// SPDX-License-Identifier: BSD-3-Clause
// How cuda_flash stages fp8 inputs, asked of the device itself: the 16-bit element its shared tiles
// hold for each of the 256 patterns of an fp8 tensor, so that a test can hold the device's decoding
// against the host's (cpu_flash reads the same patterns through widening_table).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/planted_bug.h"

namespace attnfuzz {

// Element p (0 to 255) is the `element` pattern (fp16 or bf16) cuda_flash stages for fp8 pattern p
// of a tensor stored as `stored` (e4m3 or e5m2), read as `plant` reads it, decoded on the device.
// Empty in a build without CUDA; throws on a CUDA error.
std::vector<std::uint16_t> cuda_flash_staged_fp8_elements(Dtype stored, Dtype element,
                                                          PlantedBug plant);

}  // namespace attnfuzz
