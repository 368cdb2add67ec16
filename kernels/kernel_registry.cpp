#include "kernels/kernel_registry.h"

namespace attnfuzz {

std::span<const AttentionKernel* const> all_kernels() {
  static const AttentionKernel* const kernels[] = {
    &cpu_flash_kernel(),
#if ATTNFUZZ_HAVE_CUDA
    &cuda_flash_kernel(),
    &cuda_naive_kernel(),
#endif
  };
  return kernels;
}

const AttentionKernel* find_kernel(std::string_view name) {
  for (const AttentionKernel* kernel : all_kernels()) {
    if (kernel->name() == name) return kernel;
  }
  return nullptr;
}

}  // namespace attnfuzz
