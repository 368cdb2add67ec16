// SPDX-License-Identifier: BSD-3-Clause
// A CUDA plugin that writes through a wild device pointer on one shape, for the containment
// tests on a GPU: the CUDA example's correct attention (examples/cuda_plugin/naive_attention.cu),
// except that a case with seq_len_k == 97 launches a kernel storing far outside the output. The
// error is sticky: the CUDA context is unusable afterwards, so the worker must leave and a fresh
// one (a fresh context) take the rest.
#include <cuda_runtime.h>

#include <cstdint>

#include "attnfuzz/attnfuzz_plugin.h"
#include "cuda_plugin/naive_attention.h"

namespace {

constexpr long long kFaultSeqLenK = 97;

__global__ void store_through_wild_pointer(uint16_t* output) {
  output[-(static_cast<long long>(1) << 40) + threadIdx.x] = 0;
}

}  // namespace

extern "C" {

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return "fault_illegal_address";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_CUDA_DEVICE;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  return naive_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  if (problem->seq_len_k != kFaultSeqLenK) {
    return naive_attention_forward(problem, tensors, error, error_size);
  }
  store_through_wild_pointer<<<1, 32, 0, static_cast<cudaStream_t>(tensors->cuda_stream)>>>(
      tensors->o);
  return ATTNFUZZ_STATUS_OK;  // as a buggy kernel would: the harness finds the error at its sync
}

}  // extern "C"
