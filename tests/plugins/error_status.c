// SPDX-License-Identifier: BSD-3-Clause
/* A plugin whose forward call always fails with a message, and that declines head_dim 96:
 * the failure must carry its message, the decline its reason. */
#include <stdio.h>

#include "attnfuzz/attnfuzz_plugin.h"

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}
const char* attnfuzz_plugin_name(void) {
  return "error_status";
}
int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  if (problem->head_dim == 96) {
    snprintf(reason, reason_size, "no head_dim 96 here");
    return 0;
  }
  return 1;
}
int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  (void)tensors;
  snprintf(error, error_size, "workspace of %lld bytes could not be allocated",
           (long long)(problem->seq_len_k * 4096));
  return ATTNFUZZ_STATUS_ERROR;
}
