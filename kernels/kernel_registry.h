// SPDX-License-Identifier: BSD-3-Clause
// Every kernel under test in this build, by name.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "kernels/attention_kernel.h"

namespace attnfuzz {

std::span<const AttentionKernel* const> all_kernels();
const AttentionKernel* find_kernel(std::string_view name);  // nullptr when unknown

// Adds a kernel made at run time (a plugin, kernels/plugin_kernel.h) and keeps it for the rest of
// the process. The caller checks that its name is new.
const AttentionKernel& add_kernel(std::unique_ptr<const AttentionKernel> kernel);

// Kernels defined in their own files.
const AttentionKernel& cpu_flash_kernel();
#if ATTNFUZZ_HAVE_CUDA
const AttentionKernel& cuda_flash_kernel();
const AttentionKernel& cuda_naive_kernel();
#endif

}  // namespace attnfuzz
