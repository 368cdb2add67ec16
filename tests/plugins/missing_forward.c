// SPDX-License-Identifier: BSD-3-Clause
/* A plugin that forgot to export its forward function: the harness must name the symbol. */
#include "attnfuzz/attnfuzz_plugin.h"

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}
const char* attnfuzz_plugin_name(void) {
  return "missing_forward";
}
int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  (void)problem, (void)reason, (void)reason_size;
  return 1;
}
