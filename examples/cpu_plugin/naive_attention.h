// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's attention, apart from the ABI glue (attention_plugin.c) so that other
 * plugins can reuse it: a straightforward forward pass on the host, the kind of reference a kernel
 * author writes first. Scores and softmax in fp32 (max-subtracted), P kept in fp32, output rounded
 * to the input dtype. */
#ifndef EXAMPLE_NAIVE_ATTENTION_H
#define EXAMPLE_NAIVE_ATTENTION_H

#include <stddef.h>

#include "attnfuzz/attnfuzz_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head_dim it computes: a query row and an output row live on the stack. */
#define NAIVE_ATTENTION_MAX_HEAD_DIM 1024

/* As attnfuzz_plugin_supports: 1 when it can compute `problem`; 0 with a reason when not. */
int naive_attention_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size);

/* As attnfuzz_plugin_forward, on host tensors. `causal_slack` keys past the causal mask's edge are
 * visible to each query as well: 0 is correct attention; 1 plants a causal off-by-one. */
int naive_attention_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            int causal_slack, char* error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* EXAMPLE_NAIVE_ATTENTION_H */
