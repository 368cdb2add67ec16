// SPDX-License-Identifier: BSD-3-Clause
// The CUDA version 2 example plugin's attention, apart from the ABI glue (attention_plugin.cu):
// every attention variant of ABI version 2 on the device, written from its definition in
// attnfuzz_plugin.h as the host example (examples/cpu_plugin_v2) is. One thread block per query
// row: its sequence's keys (packed or through the block table), the window, fp32 scores scaled,
// soft-capped and ALiBi-biased in shared memory, a max-subtracted softmax in fp32, the output
// rounded to the input dtype and the natural log-sum-exp.
#pragma once

#include <cstddef>

#include "attnfuzz/attnfuzz_plugin.h"

// Every feature of version 2.
#define CUDA_VARIANT_ATTENTION_FEATURES                                                    \
  (ATTNFUZZ_FEATURE_VARLEN | ATTNFUZZ_FEATURE_PAGED_KV | ATTNFUZZ_FEATURE_SLIDING_WINDOW | \
   ATTNFUZZ_FEATURE_SOFTCAP | ATTNFUZZ_FEATURE_ALIBI | ATTNFUZZ_FEATURE_RETURN_LSE)

// As attnfuzz_plugin_supports_v2: 1 when it can compute `problem`; 0 with a reason when not (a
// row of scores must fit in shared memory, and the longest sequence, heads and batch are grid
// dimensions).
int cuda_variant_attention_supports(const attnfuzz_problem_v2* problem, char* reason,
                                    size_t reason_size);

// As attnfuzz_plugin_forward_v2, on device tensors: launches on the stream of `tensors` and
// returns without waiting. `window_slack` keys left of the sliding window's edge are visible to
// each query as well: 0 is correct attention; 1 plants a window edge off by one.
int cuda_variant_attention_forward(const attnfuzz_problem_v2* problem,
                                   const attnfuzz_tensors_v2* tensors, int window_slack,
                                   char* error, size_t error_size);
