// SPDX-License-Identifier: BSD-3-Clause
/* Plugins of ABI version 3 whose backward pass changes from call to call, as one with atomics on dQ
 * does: the example's correct attention and backward (examples/cpu_plugin_v2), and on every second
 * backward call dQ's element [0, 0, 0, 0] changed, as FLAKY_BACKWARD chooses:
 *   FLAKY_BACKWARD_DECLARED_LAST_BIT    its last bit flipped (an accumulation order's difference),
 *                                       and ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD declared
 *   FLAKY_BACKWARD_UNDECLARED_LAST_BIT  the same, not declared
 *   FLAKY_BACKWARD_DECLARED_WRONG       replaced by 1000 (a race that lost an update), declared
 * The first passes run by run; the second must fail as a difference between runs, the third as a
 * wrong second run. */
#include <stddef.h>
#include <stdint.h>

#include "attnfuzz/attnfuzz_plugin.h"
#include "cpu_plugin/half_bits.h"
#include "cpu_plugin_v2/variant_attention.h"

#define FLAKY_BACKWARD_DECLARED_LAST_BIT 1
#define FLAKY_BACKWARD_UNDECLARED_LAST_BIT 2
#define FLAKY_BACKWARD_DECLARED_WRONG 3

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return FLAKY_BACKWARD == FLAKY_BACKWARD_DECLARED_LAST_BIT     ? "flaky_backward_declared"
         : FLAKY_BACKWARD == FLAKY_BACKWARD_UNDECLARED_LAST_BIT ? "flaky_backward_undeclared"
                                                                : "flaky_backward_wrong";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

uint32_t attnfuzz_plugin_features(void) {
  const uint32_t declared = FLAKY_BACKWARD == FLAKY_BACKWARD_UNDECLARED_LAST_BIT
                                ? 0u
                                : ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD;
  return VARIANT_ATTENTION_FEATURES | ATTNFUZZ_FEATURE_BACKWARD | declared;
}

int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  return variant_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  return variant_attention_forward(problem, tensors, 0, error, error_size);
}

int attnfuzz_plugin_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                      size_t reason_size) {
  return variant_attention_supports_backward(problem, reason, reason_size);
}

int attnfuzz_plugin_backward(const attnfuzz_backward_problem* problem,
                             const attnfuzz_tensors_v2* tensors,
                             const attnfuzz_backward_tensors* gradients, char* error,
                             size_t error_size) {
  static unsigned calls = 0;
  const int status = variant_attention_backward(problem, tensors, gradients, 0, error, error_size);
  const attnfuzz_problem* base = &problem->forward.base;
  const int64_t rows = problem->forward.varlen_q ? problem->forward.total_q : base->seq_len_q;
  if (status != ATTNFUZZ_STATUS_OK || ++calls % 2 != 0 || base->batch == 0 || rows == 0 ||
      base->head_dim == 0) {
    return status;
  }
  uint16_t* first = gradients->dq; /* element [0, 0, 0, 0]: the first row there is */
  *first = FLAKY_BACKWARD == FLAKY_BACKWARD_DECLARED_WRONG
               ? float_to_half_bits(1000.0f, base->dtype)
               : (uint16_t)(*first ^ 1u);
  return status;
}

/* Version 1's entry points, which the harness never calls on a plugin of version 2 or later. */
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  (void)problem;
  if (reason_size > 0) reason[0] = '\0';
  return 0;
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  (void)problem;
  (void)tensors;
  (void)error;
  (void)error_size;
  return ATTNFUZZ_STATUS_ERROR;
}
