// SPDX-License-Identifier: BSD-3-Clause
// An attnfuzz plugin of ABI version 2 whose kernel runs on a CUDA device: the five functions of
// version 1 and the three of version 2 around variant_attention.cu, every attention variant. The
// harness copies the inputs (cu_seqlens, the block table and the slopes too) to the device, fences
// the outputs, and passes device pointers; the plugin only launches. docs/plugin.md builds it:
//
//     nvcc -O2 -shared -Xcompiler -fPIC -I<attnfuzz>/include *.cu -o
//     libexample_cuda_attention_v2.so fuzz_attention --kernel-lib ./libexample_cuda_attention_v2.so
//     --configs corpus/matrix/variants.json
//
// Compiled with -DEXAMPLE_PLANT_WINDOW_EDGE_OFF_BY_ONE it lets each query see one key left of the
// sliding window: the harness must catch that copy.
#include "attnfuzz/attnfuzz_plugin.h"
#include "variant_attention.h"

#ifdef EXAMPLE_PLANT_WINDOW_EDGE_OFF_BY_ONE
#define EXAMPLE_NAME "example_cuda_attention_v2_buggy"
#define WINDOW_SLACK 1
#else
#define EXAMPLE_NAME "example_cuda_attention_v2"
#define WINDOW_SLACK 0
#endif

namespace {

// Version 1's problem as a version 2 problem with every variant off.
attnfuzz_problem_v2 dense_problem(const attnfuzz_problem* problem) {
  attnfuzz_problem_v2 dense{};
  dense.base = *problem;
  dense.window_left = dense.window_right = -1;
  return dense;
}

}  // namespace

extern "C" {

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return EXAMPLE_NAME;
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_CUDA_DEVICE;
}

uint32_t attnfuzz_plugin_features(void) {
  return CUDA_VARIANT_ATTENTION_FEATURES;
}

int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  return cuda_variant_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  return cuda_variant_attention_forward(problem, tensors, WINDOW_SLACK, error, error_size);
}

// Version 1's entry points, which the harness calls only on a plugin without version 2's.
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  const attnfuzz_problem_v2 dense = dense_problem(problem);
  return cuda_variant_attention_supports(&dense, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  const attnfuzz_problem_v2 dense = dense_problem(problem);
  const attnfuzz_tensors_v2 dense_tensors = {*tensors, nullptr, nullptr, nullptr, nullptr, nullptr};
  return cuda_variant_attention_forward(&dense, &dense_tensors, WINDOW_SLACK, error, error_size);
}

}  // extern "C"
