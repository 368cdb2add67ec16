// SPDX-License-Identifier: BSD-3-Clause
/* Plugins of ABI version 3 whose backward declaration and symbols disagree, as MALFORMED_BACKWARD
 * chooses: the harness must refuse each on loading, naming what is missing, but the second, which
 * loads and skips backward cases saying why (as a bridge hosting a function without a backward).
 *   MALFORMED_BACKWARD_BIT_WITHOUT_SYMBOLS  declares ATTNFUZZ_FEATURE_BACKWARD, exports neither
 *   MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT  exports both, declares no ATTNFUZZ_FEATURE_BACKWARD
 *   MALFORMED_BACKWARD_ONE_SYMBOL           declares it, exports attnfuzz_plugin_backward alone
 *   MALFORMED_BACKWARD_NONDETERMINISM_ONLY  declares ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD
 *                                           alone, exports neither */
#include "attnfuzz/attnfuzz_plugin.h"

#define MALFORMED_BACKWARD_BIT_WITHOUT_SYMBOLS 1
#define MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT 2
#define MALFORMED_BACKWARD_ONE_SYMBOL 3
#define MALFORMED_BACKWARD_NONDETERMINISM_ONLY 4

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}
const char* attnfuzz_plugin_name(void) {
  return MALFORMED_BACKWARD == MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT
             ? "backward_symbols_without_bit"
             : "malformed_backward";
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
  return ATTNFUZZ_STATUS_ERROR;
}
uint32_t attnfuzz_plugin_features(void) {
  switch (MALFORMED_BACKWARD) {
    case MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT:
      return 0u;
    case MALFORMED_BACKWARD_NONDETERMINISM_ONLY:
      return ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD;
    default:
      return ATTNFUZZ_FEATURE_BACKWARD;
  }
}
int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  (void)problem, (void)reason, (void)reason_size;
  return 1;
}
int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  (void)problem, (void)tensors, (void)error, (void)error_size;
  return ATTNFUZZ_STATUS_ERROR;
}
#if MALFORMED_BACKWARD == MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT
int attnfuzz_plugin_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                      size_t reason_size) {
  (void)problem, (void)reason, (void)reason_size;
  return 1;
}
#endif
#if MALFORMED_BACKWARD == MALFORMED_BACKWARD_SYMBOLS_WITHOUT_BIT || \
    MALFORMED_BACKWARD == MALFORMED_BACKWARD_ONE_SYMBOL
int attnfuzz_plugin_backward(const attnfuzz_backward_problem* problem,
                             const attnfuzz_tensors_v2* tensors,
                             const attnfuzz_backward_tensors* gradients, char* error,
                             size_t error_size) {
  (void)problem, (void)tensors, (void)gradients, (void)error, (void)error_size;
  return ATTNFUZZ_STATUS_ERROR;
}
#endif
