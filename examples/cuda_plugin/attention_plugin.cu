// SPDX-License-Identifier: BSD-3-Clause
// An attnfuzz plugin whose kernel runs on a CUDA device: the five functions of the plugin ABI
// around naive_attention.cu, one thread block per query row, scores and softmax in fp32 in shared
// memory. The harness copies the inputs to the device, fences the output, and passes device
// pointers; the plugin only launches. docs/plugin.md builds it with
//
//     nvcc -O2 -shared -Xcompiler -fPIC -I<attnfuzz>/include *.cu -o libexample_cuda_attention.so
//     fuzz_attention --kernel-lib ./libexample_cuda_attention.so --configs corpus/matrix/pr.json
#include "attnfuzz/attnfuzz_plugin.h"
#include "naive_attention.h"

extern "C" {

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return "example_cuda_attention";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_CUDA_DEVICE;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  return naive_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  return naive_attention_forward(problem, tensors, error, error_size);
}

}  // extern "C"
