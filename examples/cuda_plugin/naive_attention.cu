// SPDX-License-Identifier: BSD-3-Clause
// The CUDA example plugin's attention (naive_attention.h): one thread block per query row.
#include "naive_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace {

constexpr int kThreads = 128;
constexpr long long kMaxSeqLenK = 12288;  // the row of fp32 scores stays in 48 KiB of shared memory

__device__ float load(uint16_t bits, int32_t dtype) {
  return dtype == ATTNFUZZ_DTYPE_FP16 ? __half2float(__ushort_as_half(bits))
                                      : __bfloat162float(__ushort_as_bfloat16(bits));
}

__device__ uint16_t store(float value, int32_t dtype) {
  return dtype == ATTNFUZZ_DTYPE_FP16 ? __half_as_ushort(__float2half_rn(value))
                                      : __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// Every thread gets the block's maximum (or sum) of `value`.
__device__ float block_reduce(float value, bool maximum) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xFFFFFFFFu, value, offset);
    value = maximum ? fmaxf(value, other) : value + other;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  float total = partial[0];
  for (int w = 1; w < kThreads / 32; ++w)
    total = maximum ? fmaxf(total, partial[w]) : total + partial[w];
  __syncthreads();
  return total;
}

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
    for (long long d = 0; d < p.head_dim; ++d) dot += load(q[d], p.dtype) * load(k[d], p.dtype);
    scores[j] = dot * static_cast<float>(p.softmax_scale);
    local_max = fmaxf(local_max, scores[j]);
  }
  const float row_max = block_reduce(local_max, true);
  float local_sum = 0.0f;
  for (long long j = threadIdx.x; j < visible; j += kThreads) {
    scores[j] = expf(scores[j] - row_max);
    local_sum += scores[j];
  }
  const float row_sum = block_reduce(local_sum, false);
  uint16_t* o = t.o + b * p.o_strides.batch + i * p.o_strides.seq + h * p.o_strides.head;
  for (long long d = threadIdx.x; d < p.head_dim; d += kThreads) {
    float acc = 0.0f;
    for (long long j = 0; j < visible; ++j) {
      acc += scores[j] *
             load(t.v[b * p.v_strides.batch + j * p.v_strides.seq + kv * p.v_strides.head + d],
                  p.dtype);
    }
    o[d] = store(visible == 0 ? 0.0f : acc / row_sum, p.dtype);
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
