// SPDX-License-Identifier: BSD-3-Clause
/* An attnfuzz plugin in plain C: the five functions of version 1, the three of version 2 around a
 * host forward pass with every attention variant (variant_attention.c) and, as version 4 hands
 * them through the same functions, fp8 inputs; and version 3's two around its backward pass
 * (variant_attention_backward.c). docs/plugin.md builds and runs it:
 *
 *     cc -O2 -shared -fPIC -I<attnfuzz>/include *.c -o libexample_attention_v2.so -lm
 *     fuzz_attention --kernel-lib ./libexample_attention_v2.so --configs corpus/matrix/pr.json
 *     fuzz_attention --kernel-lib ./libexample_attention_v2.so \
 *         --configs corpus/matrix/backward.json
 *
 * Compiled with -DEXAMPLE_PLANT_WINDOW_EDGE_OFF_BY_ONE it lets each query see one key left of the
 * sliding window; with -DEXAMPLE_PLANT_ROWSUM_DROPPED its backward leaves out D = rowsum(dO * O):
 * the harness must catch both copies.
 */
#include "attnfuzz/attnfuzz_plugin.h"
#include "variant_attention.h"

#if defined(EXAMPLE_PLANT_WINDOW_EDGE_OFF_BY_ONE)
#define EXAMPLE_NAME "example_cpu_attention_v2_buggy"
#elif defined(EXAMPLE_PLANT_ROWSUM_DROPPED)
#define EXAMPLE_NAME "example_cpu_attention_v2_backward_buggy"
#else
#define EXAMPLE_NAME "example_cpu_attention_v2"
#endif

#ifdef EXAMPLE_PLANT_WINDOW_EDGE_OFF_BY_ONE
#define WINDOW_SLACK 1
#else
#define WINDOW_SLACK 0
#endif

#ifdef EXAMPLE_PLANT_ROWSUM_DROPPED
#define DROP_ROWSUM 1
#else
#define DROP_ROWSUM 0
#endif

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return EXAMPLE_NAME;
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

uint32_t attnfuzz_plugin_features(void) {
  return VARIANT_ATTENTION_FEATURES | ATTNFUZZ_FEATURE_FP8_INPUTS | ATTNFUZZ_FEATURE_BACKWARD;
}

int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  return variant_attention_supports(problem, reason, reason_size);
}

/* Built for version 4 (it returns ATTNFUZZ_PLUGIN_ABI_VERSION): the harness hands it an
 * attnfuzz_problem_v4 and an attnfuzz_tensors_v4, whose first members these pointers point at. */
int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  return variant_attention_forward_v4((const attnfuzz_problem_v4*)problem,
                                      (const attnfuzz_tensors_v4*)tensors, WINDOW_SLACK, error,
                                      error_size);
}

int attnfuzz_plugin_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                      size_t reason_size) {
  return variant_attention_supports_backward(problem, reason, reason_size);
}

int attnfuzz_plugin_backward(const attnfuzz_backward_problem* problem,
                             const attnfuzz_tensors_v2* tensors,
                             const attnfuzz_backward_tensors* gradients, char* error,
                             size_t error_size) {
  return variant_attention_backward(problem, tensors, gradients, DROP_ROWSUM, error, error_size);
}

/* Version 1's entry points, which the harness calls only on a plugin without version 2's: a dense
 * problem is a version 2 problem with every variant off. */
static attnfuzz_problem_v2 dense_problem(const attnfuzz_problem* problem) {
  attnfuzz_problem_v2 dense = {0};
  dense.base = *problem;
  dense.window_left = dense.window_right = -1;
  return dense;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  const attnfuzz_problem_v2 dense = dense_problem(problem);
  return variant_attention_supports(&dense, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  const attnfuzz_problem_v2 dense = dense_problem(problem);
  const attnfuzz_tensors_v2 dense_tensors = {*tensors, NULL, NULL, NULL, NULL, NULL};
  return variant_attention_forward(&dense, &dense_tensors, WINDOW_SLACK, error, error_size);
}
