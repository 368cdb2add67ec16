// SPDX-License-Identifier: BSD-3-Clause
// Plugins as the kernel tests load them: once per process (a second load of the same name is
// refused by design, so tests that share a process share the loaded kernel), and the loader's
// refusal as text.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/kernel_registry.h"
#include "kernels/plugin_kernel.h"

namespace attnfuzz {

inline const AttentionKernel& plugin(const char* path, std::string_view name) {
  if (const AttentionKernel* loaded = find_kernel(name)) return *loaded;
  return load_plugin_kernel(path);
}

// The loader's message for `path`, or "(no error)" when it loaded.
inline std::string load_error(const char* path) {
  try {
    load_plugin_kernel(path);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace attnfuzz
