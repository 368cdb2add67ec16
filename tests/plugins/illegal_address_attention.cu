// A CUDA plugin that writes through a wild device pointer on one shape, for the containment
// tests on a GPU: the CUDA example's correct attention, except that a case with seq_len_k == 97
// launches a kernel storing far outside the output. The error is sticky: the CUDA context is
// unusable afterwards, so the worker must leave and a fresh one (a fresh context) take the rest.
#include <cstdint>

#define attnfuzz_plugin_name example_plugin_name
#define attnfuzz_plugin_forward example_plugin_forward
#include "cuda_plugin/attention_plugin.cu"
#undef attnfuzz_plugin_name
#undef attnfuzz_plugin_forward

namespace {

constexpr long long kFaultSeqLenK = 97;

__global__ void store_through_wild_pointer(uint16_t* output) {
  output[-(static_cast<long long>(1) << 40) + threadIdx.x] = 0;
}

}  // namespace

extern "C" const char* attnfuzz_plugin_name(void) {
  return "fault_illegal_address";
}

extern "C" int attnfuzz_plugin_forward(const attnfuzz_problem* problem,
                                       const attnfuzz_tensors* tensors, char* error,
                                       size_t error_size) {
  if (problem->seq_len_k != kFaultSeqLenK) {
    return example_plugin_forward(problem, tensors, error, error_size);
  }
  store_through_wild_pointer<<<1, 32, 0, static_cast<cudaStream_t>(tensors->cuda_stream)>>>(
      tensors->o);
  return ATTNFUZZ_STATUS_OK;  // as a buggy kernel would: the harness finds the error at its sync
}
