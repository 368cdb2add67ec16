// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/kernel_registry.h"

#include <memory>
#include <vector>

namespace attnfuzz {
namespace {

struct Registry {
  std::vector<const AttentionKernel*> kernels = {
      &cpu_flash_kernel(),
#if ATTNFUZZ_HAVE_CUDA
      &cuda_flash_kernel(),
      &cuda_naive_kernel(),
#endif
  };
  std::vector<std::unique_ptr<const AttentionKernel>> added;  // owned: plugins
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

std::span<const AttentionKernel* const> all_kernels() {
  return registry().kernels;
}

const AttentionKernel* find_kernel(std::string_view name) {
  for (const AttentionKernel* kernel : all_kernels()) {
    if (kernel->name() == name) return kernel;
  }
  return nullptr;
}

const AttentionKernel& add_kernel(std::unique_ptr<const AttentionKernel> kernel) {
  Registry& instance = registry();
  instance.kernels.push_back(kernel.get());
  instance.added.push_back(std::move(kernel));
  return *instance.added.back();
}

}  // namespace attnfuzz
