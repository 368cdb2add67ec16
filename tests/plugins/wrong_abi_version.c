// SPDX-License-Identifier: BSD-3-Clause
/* A plugin built against another ABI version: the harness must refuse it by name. */
#include "attnfuzz/attnfuzz_plugin.h"

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION + 41;
}
const char* attnfuzz_plugin_name(void) {
  return "wrong_abi_version";
}
int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  (void)problem, (void)reason, (void)reason_size;
  return 1;
}
int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  (void)problem, (void)tensors, (void)error, (void)error_size;
  return ATTNFUZZ_STATUS_OK;
}
