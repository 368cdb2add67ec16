// SPDX-License-Identifier: BSD-3-Clause
// The CUDA example plugin's attention, apart from the ABI glue (attention_plugin.cu) so that other
// plugins can reuse it: one thread block per query row, scores and softmax in fp32 in shared
// memory, launched on the harness's stream with device pointers.
#pragma once

#include <cstddef>

#include "attnfuzz/attnfuzz_plugin.h"

// As attnfuzz_plugin_supports: 1 when it can compute `problem`; 0 with a reason when not (a row of
// scores must fit in shared memory, and batch and heads are grid dimensions).
int naive_attention_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size);

// As attnfuzz_plugin_forward, on device tensors: launches on tensors->cuda_stream and returns
// without waiting for the kernel; a launch that fails is ATTNFUZZ_STATUS_ERROR with its message.
int naive_attention_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size);
