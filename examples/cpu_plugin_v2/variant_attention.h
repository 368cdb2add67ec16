// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's attention, apart from the ABI glue (attention_plugin.c): a straightforward
 * forward pass on the host with every attention variant of ABI version 2, each written from its
 * definition in attnfuzz_plugin.h, and version 3's backward pass (variant_attention_backward.c).
 * Per query row: its sequence's keys (packed or through the block table), the window, fp32 scores
 * scaled, soft-capped and ALiBi-biased, a max-subtracted softmax in fp32, the output rounded to the
 * input dtype and the natural log-sum-exp. */
#ifndef EXAMPLE_VARIANT_ATTENTION_H
#define EXAMPLE_VARIANT_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "attnfuzz/attnfuzz_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head_dim it computes: a query row and an output row live on the stack. */
#define VARIANT_ATTENTION_MAX_HEAD_DIM 1024

/* Every feature of version 2 (the forward's variants). */
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

/* As variant_attention_forward, with version 4's fp8 inputs: each of Q, K and V read in its own
 * dtype (bytes for e4m3 and e5m2), Q's and K's descale factors folded into the softmax scale and
 * V's into the output, as FlashAttention 3 does. */
int variant_attention_forward_v4(const attnfuzz_problem_v4* problem,
                                 const attnfuzz_tensors_v4* tensors, int window_slack, char* error,
                                 size_t error_size);

/* As attnfuzz_plugin_supports_backward: every variant but paged K/V, which is forward-only here. */
int variant_attention_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                        size_t reason_size);

/* As attnfuzz_plugin_backward, on host tensors: P recomputed per row from the forward's
 * log-sum-exp, D = rowsum(dO * O), dS = P * (dP - D) (times softcap's slope), dQ, dK and dV
 * accumulated in fp32 and rounded to the dtype once. `drop_rowsum` 1 plants the classic bug of a
 * backward that leaves D out. */
int variant_attention_backward(const attnfuzz_backward_problem* problem,
                               const attnfuzz_tensors_v2* tensors,
                               const attnfuzz_backward_tensors* gradients, int drop_rowsum,
                               char* error, size_t error_size);

/* What the forward and the backward share. */

/* Rows of sequence b in a tensor packed by `cu_seqlens` (when `packed`), else `longest`. */
int64_t variant_sequence_length(int32_t packed, const int32_t* cu_seqlens, int64_t b,
                                int64_t longest);

/* Element [0] of row `row` of sequence b, head `head`, in Q or O (or a tensor laid out as they
 * are, by `strides`). */
int64_t variant_query_offset(const attnfuzz_problem_v2* p, const int32_t* cu_seqlens_q,
                             const attnfuzz_strides* strides, int64_t b, int64_t row, int64_t head);

/* Element [0] of key `key` of sequence b, kv head `head`, in K or V: through the block table when
 * paged, packed by cu_seqlens_k when varlen, else dense. */
int64_t variant_key_offset(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                           const attnfuzz_strides* strides, int64_t b, int64_t key, int64_t head);

/* The keys first .. last - 1 that query i of a sequence of seq_q queries and seq_k keys sees
 * (causal mask and window; `window_slack` as in variant_attention_forward). */
typedef struct variant_key_range {
  int64_t first, last;
} variant_key_range;
variant_key_range variant_visible_keys(const attnfuzz_problem_v2* p, int64_t i, int64_t seq_q,
                                       int64_t seq_k, int window_slack);

/* Score of the query row `query` (fp32) of head h against key j of kv head kv, sequence b:
 * scaled, soft-capped, ALiBi-biased (`diagonal` is i + Sk - Sq). Stores d(capped)/d(scaled),
 * 1 - tanh^2, in *softcap_slope when that is not NULL (1 without a softcap). */
float variant_attention_score(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                              const float* query, int64_t b, int64_t h, int64_t kv,
                              int64_t diagonal, int64_t j, float* softcap_slope);

#ifdef __cplusplus
}
#endif

#endif /* EXAMPLE_VARIANT_ATTENTION_H */
