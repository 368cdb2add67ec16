/* Plugins that misbehave on one shape, for the containment tests: the example plugin's correct
 * attention (examples/cpu_plugin/naive_attention.c), except that a case with
 * seq_len_k == FAULT_SEQ_LEN_K does what FAULT_KIND says:
 *   FAULT_SEGFAULT             writes far outside the output (a wild pointer): SIGSEGV
 *   FAULT_HANG                 spins forever (a loop bound that never moves)
 *   FAULT_UNBOUNDED_ALLOCATION allocates and touches 64 MiB workspaces without end, and reports
 *                              the allocation that fails, as a careful kernel would
 * Every other case runs, and passes, as the example does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/attnfuzz_plugin.h"
#include "cpu_plugin/naive_attention.h"

#define FAULT_SEGFAULT 1
#define FAULT_HANG 2
#define FAULT_UNBOUNDED_ALLOCATION 3
#define FAULT_SEQ_LEN_K 97

#if FAULT_KIND == FAULT_SEGFAULT
#define FAULT_NAME "fault_segfault"
#elif FAULT_KIND == FAULT_HANG
#define FAULT_NAME "fault_hang"
#elif FAULT_KIND == FAULT_UNBOUNDED_ALLOCATION
#define FAULT_NAME "fault_unbounded_allocation"
#else
#error "FAULT_KIND must be FAULT_SEGFAULT, FAULT_HANG or FAULT_UNBOUNDED_ALLOCATION"
#endif

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return FAULT_NAME;
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  return naive_attention_supports(problem, reason, reason_size);
}

static int fault(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors, char* error,
                 size_t error_size) {
  /* A last word on stderr, as a kernel's debug print would be: the harness keeps it. */
  fprintf(stderr, "%s: seq_len_k %lld, here it goes\n", FAULT_NAME, (long long)problem->seq_len_k);
  fflush(stderr);
#if FAULT_KIND == FAULT_SEGFAULT
  (void)error;
  (void)error_size;
  volatile uint16_t* wild = tensors->o - ((int64_t)1 << 44) * problem->batch;
  *wild = 0;
  return ATTNFUZZ_STATUS_OK;
#elif FAULT_KIND == FAULT_HANG
  (void)tensors;
  (void)error;
  (void)error_size;
  volatile int64_t position = 0;
  while (position < problem->seq_len_k) position = position * 1; /* never advances */
  return ATTNFUZZ_STATUS_OK;
#else
  (void)problem;
  (void)tensors;
  const size_t workspace_bytes = (size_t)64 << 20;
  for (size_t count = 1;; ++count) {
    char* workspace = malloc(workspace_bytes);
    if (workspace == NULL) {
      snprintf(error, error_size, "cannot allocate workspace %zu of 64 MiB", count);
      return ATTNFUZZ_STATUS_ERROR; /* the earlier ones stay leaked, as the bug has it */
    }
    memset(workspace, (int)count, workspace_bytes);
  }
#endif
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  if (problem->seq_len_k == FAULT_SEQ_LEN_K) return fault(problem, tensors, error, error_size);
  return naive_attention_forward(problem, tensors, 0, error, error_size);
}
