// SPDX-License-Identifier: BSD-3-Clause
/* A plugin as built against version 1 of the ABI: it says version 1 and exports only version 1's
 * five symbols, around the example plugin's attention (examples/cpu_plugin/naive_attention.c).
 * Version 1's structures are version 2's unchanged, so this is what an old binary looks like to
 * the harness: it must run the dense cases and skip the others, naming the feature. */
#include "attnfuzz/attnfuzz_plugin.h"
#include "cpu_plugin/naive_attention.h"

int attnfuzz_plugin_abi_version(void) {
  return 1;
}

const char* attnfuzz_plugin_name(void) {
  return "abi_version_1";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  return naive_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  return naive_attention_forward(problem, tensors, 0, error, error_size);
}
