// SPDX-License-Identifier: BSD-3-Clause
/* An attnfuzz plugin in plain C: the five functions of the plugin ABI around a straightforward
 * attention forward pass on the host (naive_attention.c), the kind of reference a kernel author
 * writes first. docs/plugin.md builds and runs it:
 *
 *     cc -O2 -shared -fPIC -I<attnfuzz>/include *.c -o libexample_attention.so -lm
 *     fuzz_attention --kernel-lib ./libexample_attention.so --configs corpus/matrix/pr.json
 *
 * Compiled with -DEXAMPLE_PLANT_CAUSAL_OFF_BY_ONE it lets each query see one key too many under the
 * causal mask: the harness must catch that copy.
 */
#include "attnfuzz/attnfuzz_plugin.h"
#include "naive_attention.h"

#ifdef EXAMPLE_PLANT_CAUSAL_OFF_BY_ONE
#define EXAMPLE_NAME "example_cpu_attention_buggy"
#define CAUSAL_SLACK 1
#else
#define EXAMPLE_NAME "example_cpu_attention"
#define CAUSAL_SLACK 0
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

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  return naive_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  return naive_attention_forward(problem, tensors, CAUSAL_SLACK, error, error_size);
}
