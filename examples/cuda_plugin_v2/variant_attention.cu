// SPDX-License-Identifier: BSD-3-Clause
// The CUDA version 2 example plugin's attention (variant_attention.h): one thread block per query
// row, the host example's loop (examples/cpu_plugin_v2/variant_attention.c) spread over a block.
#include "variant_attention.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "../cuda_plugin/device_elements.cuh"

namespace {

constexpr int kThreads = 128;
// The row of fp32 scores and the reduction's words stay in the 48 KiB of shared memory a block
// gets without asking for more.
constexpr long long kMaxSeqLenK = (48 * 1024 - 64) / 4;

// Rows of sequence b in a tensor packed by `cu_seqlens` (when `packed`), else `longest`.
__device__ long long sequence_length(int32_t packed, const int32_t* cu_seqlens, long long b,
                                     long long longest) {
  return packed ? cu_seqlens[b + 1] - cu_seqlens[b] : longest;
}

// Element [0] of row `row` of sequence b, head `head`, in Q or O.
__device__ long long query_offset(const attnfuzz_problem_v2& p, const int32_t* cu_seqlens_q,
                                  const attnfuzz_strides& strides, long long b, long long row,
                                  long long head) {
  const long long rows = p.varlen_q ? cu_seqlens_q[b] * strides.seq : b * strides.batch;
  return rows + row * strides.seq + head * strides.head;
}

// Element [0] of key `key` of sequence b, kv head `head`, in K or V: through the block table when
// paged, packed by cu_seqlens_k when varlen, else dense.
__device__ long long key_offset(const attnfuzz_problem_v2& p, const attnfuzz_tensors_v2& t,
                                const attnfuzz_strides& strides, long long b, long long key,
                                long long head) {
  long long rows;
  if (p.page_size > 0) {
    const long long page = t.block_table[b * p.pages_per_sequence + key / p.page_size];
    rows = page * strides.batch + (key % p.page_size) * strides.seq;
  } else if (p.varlen_k) {
    rows = (t.cu_seqlens_k[b] + key) * strides.seq;
  } else {
    rows = b * strides.batch + key * strides.seq;
  }
  return rows + head * strides.head;
}

// grid (longest query sequence, heads, batch)
__global__ void attention_row(attnfuzz_problem_v2 p, attnfuzz_tensors_v2 t, int window_slack) {
  extern __shared__ float scores[];
  const attnfuzz_problem& base = p.base;
  const long long i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const long long seq_q = sequence_length(p.varlen_q, t.cu_seqlens_q, b, base.seq_len_q);
  const long long seq_k = sequence_length(p.varlen_k, t.cu_seqlens_k, b, base.seq_len_k);
  if (i >= seq_q) return;  // past this sequence's end
  const long long kv = h / (base.heads / base.kv_heads);
  // Keys first .. last - 1: the diagonal i + Sk - Sq bounds the causal mask and the window.
  const long long diagonal = i + seq_k - seq_q;
  long long first = 0, last = seq_k;
  if (base.causal && diagonal + 1 < last) last = diagonal + 1;
  if (p.window_right >= 0 && diagonal + p.window_right + 1 < last) {
    last = diagonal + p.window_right + 1;
  }
  if (p.window_left >= 0 && diagonal - p.window_left - window_slack > first) {
    first = diagonal - p.window_left - window_slack;
  }
  const uint16_t* q = t.base.q + query_offset(p, t.cu_seqlens_q, base.q_strides, b, i, h);
  const float scale = static_cast<float>(base.softmax_scale);
  const float softcap = static_cast<float>(p.softcap);
  float local_max = -INFINITY;
  for (long long j = first + threadIdx.x; j < last; j += kThreads) {
    const uint16_t* k = t.base.k + key_offset(p, t, base.k_strides, b, j, kv);
    float dot = 0.0f;
    for (long long d = 0; d < base.head_dim; ++d)
      dot += load_element(q[d], base.dtype) * load_element(k[d], base.dtype);
    float score = dot * scale;
    if (softcap > 0.0f) score = softcap * tanhf(score / softcap);
    if (p.alibi) score -= t.alibi_slopes[h] * static_cast<float>(llabs(diagonal - j));
    scores[j - first] = score;
    local_max = fmaxf(local_max, score);
  }
  const float row_max = block_reduce<kThreads>(local_max, true);
  float local_sum = 0.0f;
  for (long long j = first + threadIdx.x; j < last; j += kThreads) {
    scores[j - first] = expf(scores[j - first] - row_max);
    local_sum += scores[j - first];
  }
  const float row_sum = block_reduce<kThreads>(local_sum, false);
  const bool saw_keys = first < last;
  uint16_t* o = t.base.o + query_offset(p, t.cu_seqlens_q, base.o_strides, b, i, h);
  for (long long d = threadIdx.x; d < base.head_dim; d += kThreads) {
    float acc = 0.0f;
    for (long long j = first; j < last; ++j) {
      acc += scores[j - first] *
             load_element(t.base.v[key_offset(p, t, base.v_strides, b, j, kv) + d], base.dtype);
    }
    o[d] = store_element(saw_keys ? acc / row_sum : 0.0f, base.dtype);
  }
  if (p.return_lse && threadIdx.x == 0) {
    const long long row = p.varlen_q ? t.cu_seqlens_q[b] + i : b * p.lse_strides.batch + i;
    t.lse[row + h * p.lse_strides.head] = saw_keys ? row_max + logf(row_sum) : -INFINITY;
  }
}

}  // namespace

int cuda_variant_attention_supports(const attnfuzz_problem_v2* problem, char* reason,
                                    size_t reason_size) {
  const attnfuzz_problem& base = problem->base;
  if (base.seq_len_k > kMaxSeqLenK) {
    std::snprintf(reason, reason_size,
                  "seq_len_k %lld is more than the %lld scores of shared memory",
                  static_cast<long long>(base.seq_len_k), kMaxSeqLenK);
    return 0;
  }
  if (base.seq_len_q > 2147483647LL || base.batch > 65535 || base.heads > 65535) {
    std::snprintf(reason, reason_size,
                  "seq_len_q, heads and batch are grid dimensions: at most 2^31 - 1, 65535 and "
                  "65535");
    return 0;
  }
  return 1;
}

int cuda_variant_attention_forward(const attnfuzz_problem_v2* problem,
                                   const attnfuzz_tensors_v2* tensors, int window_slack,
                                   char* error, size_t error_size) {
  const attnfuzz_problem& base = problem->base;
  if (base.seq_len_q == 0 || base.heads == 0 || base.batch == 0) return ATTNFUZZ_STATUS_OK;
  const dim3 grid(static_cast<unsigned>(base.seq_len_q), static_cast<unsigned>(base.heads),
                  static_cast<unsigned>(base.batch));
  const size_t shared_bytes =
      sizeof(float) * static_cast<size_t>(base.seq_len_k > 0 ? base.seq_len_k : 1);
  attention_row<<<grid, kThreads, shared_bytes,
                  static_cast<cudaStream_t>(tensors->base.cuda_stream)>>>(*problem, *tensors,
                                                                          window_slack);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::snprintf(error, error_size, "launch failed: %s", cudaGetErrorString(status));
    return ATTNFUZZ_STATUS_ERROR;
  }
  return ATTNFUZZ_STATUS_OK;
}
