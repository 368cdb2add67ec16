// SPDX-License-Identifier: BSD-3-Clause
/* Plugins that misbehave on one shape, for the containment tests: the example plugin's correct
 * attention (examples/cpu_plugin/naive_attention.c), except that a case with
 * seq_len_k == FAULT_SEQ_LEN_K does what FAULT_KIND says:
 *   FAULT_SEGFAULT             writes far outside the output (a wild pointer): SIGSEGV
 *   FAULT_HANG                 spins forever (a loop bound that never moves)
 *   FAULT_UNBOUNDED_ALLOCATION allocates and touches 64 MiB workspaces without end, and reports
 *                              the allocation that fails, as a careful kernel would
 *   FAULT_FORK_THEN_CRASH      forks a child that sleeps holding every descriptor, then SIGSEGV
 *   FAULT_ORPHAN               starts a child that sleeps for an hour (its pid written to the
 *                              file $FAULT_PID_FILE), then computes the right answer
 *   FAULT_CLOSE_STDIN          closes descriptor 0, then computes the right answer
 *   FAULT_WRITE_FD3            writes a line to descriptor 3, then computes the right answer
 *   FAULT_EXIT_ZERO            calls exit(0)
 *   FAULT_CONTROL_CHARACTERS   fails with a message full of terminal escapes, a bell and a
 *                              newline that would forge a row of the table
 *   FAULT_LEAK_PER_CALL        (on every case, whatever its shape) allocates a workspace of
 *                              $FAULT_LEAK_MIB MiB (100 by default), fills it and never frees it,
 *                              then computes the right answer
 * and FAULT_LOAD_CRASH crashes (SIGSEGV) in attnfuzz_plugin_name(), as the plugin is loaded.
 * With FAULT_LEAK_MIB set, a plugin of any kind leaks so much on every call, besides its fault.
 * With the environment variable FAULT_EVERY_CASE set, every case misbehaves (for the property
 * search, whose cases are random).
 * Every other case runs, and passes, as the example does. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnfuzz/attnfuzz_plugin.h"
#include "cpu_plugin/naive_attention.h"

#define FAULT_SEGFAULT 1
#define FAULT_HANG 2
#define FAULT_UNBOUNDED_ALLOCATION 3
#define FAULT_FORK_THEN_CRASH 4
#define FAULT_ORPHAN 5
#define FAULT_CLOSE_STDIN 6
#define FAULT_WRITE_FD3 7
#define FAULT_EXIT_ZERO 8
#define FAULT_CONTROL_CHARACTERS 9
#define FAULT_LOAD_CRASH 10
#define FAULT_LEAK_PER_CALL 11
#define FAULT_SEQ_LEN_K 97

#if FAULT_KIND == FAULT_SEGFAULT
#define FAULT_NAME "fault_segfault"
#elif FAULT_KIND == FAULT_HANG
#define FAULT_NAME "fault_hang"
#elif FAULT_KIND == FAULT_UNBOUNDED_ALLOCATION
#define FAULT_NAME "fault_unbounded_allocation"
#elif FAULT_KIND == FAULT_FORK_THEN_CRASH
#define FAULT_NAME "fault_fork_then_crash"
#elif FAULT_KIND == FAULT_ORPHAN
#define FAULT_NAME "fault_orphan"
#elif FAULT_KIND == FAULT_CLOSE_STDIN
#define FAULT_NAME "fault_close_stdin"
#elif FAULT_KIND == FAULT_WRITE_FD3
#define FAULT_NAME "fault_write_fd3"
#elif FAULT_KIND == FAULT_EXIT_ZERO
#define FAULT_NAME "fault_exit_zero"
#elif FAULT_KIND == FAULT_CONTROL_CHARACTERS
#define FAULT_NAME "fault_control_characters"
#elif FAULT_KIND == FAULT_LOAD_CRASH
#define FAULT_NAME "fault_load_crash"
#elif FAULT_KIND == FAULT_LEAK_PER_CALL
#define FAULT_NAME "fault_leak_per_call"
#else
#error "FAULT_KIND must be one of the FAULT_* kinds above"
#endif

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
#if FAULT_KIND == FAULT_LOAD_CRASH
  raise(SIGSEGV); /* as a bad pointer in a constructor or query would */
#endif
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
#elif FAULT_KIND == FAULT_UNBOUNDED_ALLOCATION
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
#elif FAULT_KIND == FAULT_FORK_THEN_CRASH
  (void)problem;
  (void)error;
  (void)error_size;
  if (fork() == 0) {
    sleep(3600);
    _exit(0);
  }
  volatile uint16_t* wild = tensors->o - ((int64_t)1 << 44);
  *wild = 0;
  return ATTNFUZZ_STATUS_OK;
#elif FAULT_KIND == FAULT_ORPHAN
  const pid_t child = fork();
  if (child == 0) {
    sleep(3600);
    _exit(0);
  }
  const char* pid_file = getenv("FAULT_PID_FILE");
  FILE* file = pid_file != NULL ? fopen(pid_file, "w") : NULL;
  if (file != NULL) {
    fprintf(file, "%ld\n", (long)child);
    fclose(file);
  }
  return naive_attention_forward(problem, tensors, 0, error, error_size);
#elif FAULT_KIND == FAULT_CLOSE_STDIN
  close(0);
  return naive_attention_forward(problem, tensors, 0, error, error_size);
#elif FAULT_KIND == FAULT_WRITE_FD3
  static const char line[] = "{\"index\": 0, \"result\": \"from the kernel\"}\n";
  if (write(3, line, sizeof line - 1) < 0) { /* nothing there: as it should be */
  }
  return naive_attention_forward(problem, tensors, 0, error, error_size);
#elif FAULT_KIND == FAULT_EXIT_ZERO
  (void)problem;
  (void)tensors;
  (void)error;
  (void)error_size;
  exit(0);
#elif FAULT_KIND == FAULT_CONTROL_CHARACTERS
  (void)problem;
  (void)tensors;
  snprintf(error, error_size, "bad\033[2J\033[31m red\rover\a bell\nFAIL forged/0");
  return ATTNFUZZ_STATUS_ERROR;
#else
  return naive_attention_forward(problem, tensors, 0, error, error_size);
#endif
}

/* The latest leaked workspace, where the optimiser must keep it (an allocation nobody can see may
 * be dropped, and this one must be resident). */
static char* volatile last_leaked_workspace;

/* A per-call workspace that is never freed: filled, so that it is resident. */
static void leak_workspace(void) {
  const char* mib = getenv("FAULT_LEAK_MIB");
  if (FAULT_KIND != FAULT_LEAK_PER_CALL && mib == NULL) return;
  const size_t bytes = (size_t)(mib != NULL ? atol(mib) : 100) << 20;
  char* workspace = malloc(bytes);
  if (workspace != NULL) memset(workspace, 1, bytes);
  last_leaked_workspace = workspace;
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  leak_workspace();
  const int every_case = getenv("FAULT_EVERY_CASE") != NULL;
  if (every_case || problem->seq_len_k == FAULT_SEQ_LEN_K) {
    return fault(problem, tensors, error, error_size);
  }
  return naive_attention_forward(problem, tensors, 0, error, error_size);
}
