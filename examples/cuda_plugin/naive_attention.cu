// SPDX-License-Identifier: BSD-3-Clause
// The CUDA example plugin's attention (naive_attention.h): one thread block per query row.
#include "naive_attention.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "device_elements.cuh"

namespace {

constexpr int kThreads = 128;
// The row of fp32 scores and the reduction's words stay in the 48 KiB of shared memory a block
// gets without asking for more (12288 scores beside the reduction's 16 bytes would not).
constexpr long long kMaxSeqLenK = (48 * 1024 - 64) / 4;

// grid (seq_len_q, heads, batch)
__global__ void attention_row(attnfuzz_problem p, attnfuzz_tensors t) {
  extern __shared__ float scores[];
  const long long i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const long long kv = h / (p.heads / p.kv_heads);
  long long visible = p.seq_len_k;
  if (p.causal) {
    visible = i + p.seq_len_k - p.seq_len_q + 1;
    visible = visible < 0 ? 0 : (visible > p.seq_len_k ? p.seq_len_k : visible);
  }
  const uint16_t* q = t.q + b * p.q_strides.batch + i * p.q_strides.seq + h * p.q_strides.head;
  float local_max = -INFINITY;
  for (long long j = threadIdx.x; j < visible; j += kThreads) {
    const uint16_t* k = t.k + b * p.k_strides.batch + j * p.k_strides.seq + kv * p.k_strides.head;
    float dot = 0.0f;
    for (long long d = 0; d < p.head_dim; ++d)
      dot += load_element(q[d], p.dtype) * load_element(k[d], p.dtype);
    scores[j] = dot * static_cast<float>(p.softmax_scale);
    local_max = fmaxf(local_max, scores[j]);
  }
  const float row_max = block_reduce<kThreads>(local_max, true);
  float local_sum = 0.0f;
  for (long long j = threadIdx.x; j < visible; j += kThreads) {
    scores[j] = expf(scores[j] - row_max);
    local_sum += scores[j];
  }
  const float row_sum = block_reduce<kThreads>(local_sum, false);
  uint16_t* o = t.o + b * p.o_strides.batch + i * p.o_strides.seq + h * p.o_strides.head;
  for (long long d = threadIdx.x; d < p.head_dim; d += kThreads) {
    float acc = 0.0f;
    for (long long j = 0; j < visible; ++j) {
      acc +=
          scores[j] *
          load_element(t.v[b * p.v_strides.batch + j * p.v_strides.seq + kv * p.v_strides.head + d],
                       p.dtype);
    }
    o[d] = store_element(visible == 0 ? 0.0f : acc / row_sum, p.dtype);
  }
}

}  // namespace

int naive_attention_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  if (problem->seq_len_k > kMaxSeqLenK) {
    std::snprintf(reason, reason_size,
                  "seq_len_k %lld is more than the %lld scores of shared memory",
                  static_cast<long long>(problem->seq_len_k), kMaxSeqLenK);
    return 0;
  }
  if (problem->batch > 65535 || problem->heads > 65535) {
    std::snprintf(reason, reason_size, "batch and heads are grid dimensions: at most 65535");
    return 0;
  }
  return 1;
}

int naive_attention_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  const dim3 grid(static_cast<unsigned>(problem->seq_len_q), static_cast<unsigned>(problem->heads),
                  static_cast<unsigned>(problem->batch));
  const size_t shared_bytes = sizeof(float) * static_cast<size_t>(problem->seq_len_k);
  attention_row<<<grid, kThreads, shared_bytes, static_cast<cudaStream_t>(tensors->cuda_stream)>>>(
      *problem, *tensors);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::snprintf(error, error_size, "launch failed: %s", cudaGetErrorString(status));
    return ATTNFUZZ_STATUS_ERROR;
  }
  return ATTNFUZZ_STATUS_OK;
}
