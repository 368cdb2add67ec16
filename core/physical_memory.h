// SPDX-License-Identifier: BSD-3-Clause
// How much physical memory this machine has.
#pragma once

#include <cstdint>
#include <optional>

namespace attnfuzz {

// The machine's physical memory in bytes, or nullopt when the system does not say. Each caller
// picks its own fallback.
std::optional<std::int64_t> physical_memory_bytes();

}  // namespace attnfuzz
