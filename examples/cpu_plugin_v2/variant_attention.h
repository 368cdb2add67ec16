// SPDX-License-Identifier: BSD-3-Clause
/* The version 2 example plugin's attention, apart from the ABI glue (attention_plugin.c): a
 * straightforward forward pass on the host with every attention variant of ABI version 2, each
 * written from its definition in attnfuzz_plugin.h. Per query row: its sequence's keys (packed or
 * through the block table), the window, fp32 scores scaled, soft-capped and ALiBi-biased, a
 * max-subtracted softmax in fp32, the output rounded to the input dtype and the natural
 * log-sum-exp. */
#ifndef EXAMPLE_VARIANT_ATTENTION_H
#define EXAMPLE_VARIANT_ATTENTION_H

#include <stddef.h>

#include "attnfuzz/attnfuzz_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head_dim it computes: a query row and an output row live on the stack. */
#define VARIANT_ATTENTION_MAX_HEAD_DIM 1024

/* Every feature of version 2. */
#define VARIANT_ATTENTION_FEATURES                                                         \
  (ATTNFUZZ_FEATURE_VARLEN | ATTNFUZZ_FEATURE_PAGED_KV | ATTNFUZZ_FEATURE_SLIDING_WINDOW | \
   ATTNFUZZ_FEATURE_SOFTCAP | ATTNFUZZ_FEATURE_ALIBI | ATTNFUZZ_FEATURE_RETURN_LSE)

/* As attnfuzz_plugin_supports_v2: 1 when it can compute `problem`; 0 with a reason when not. */
int variant_attention_supports(const attnfuzz_problem_v2* problem, char* reason,
                               size_t reason_size);

/* As attnfuzz_plugin_forward_v2, on host tensors. `window_slack` keys left of the sliding window's
 * edge are visible to each query as well: 0 is correct attention; 1 plants a window edge off by
 * one. */
int variant_attention_forward(const attnfuzz_problem_v2* problem,
                              const attnfuzz_tensors_v2* tensors, int window_slack, char* error,
                              size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* EXAMPLE_VARIANT_ATTENTION_H */
