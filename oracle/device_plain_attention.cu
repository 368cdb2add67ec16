// SPDX-License-Identifier: BSD-3-Clause
#include "oracle/device_plain_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "core/device_launch.cuh"
#include "core/problem_features.h"
#include "oracle/cublas_handle.h"
#include "oracle/device_pairs.cuh"

namespace attnfuzz {
namespace {

// Scratch one chunk of (batch, kv head) pairs may take, so that the kernel has room (given back
// after the case above kKeptScratchBytes).
constexpr std::size_t kMaxChunkBytes = std::size_t{4} << 30;

// Rounds to the dtype, to nearest even, staying in float (core/dtype.h's round_to_dtype).
__device__ float round_to(float value, bool fp16) {
  return fp16 ? __half2float(__float2half_rn(value)) : __bfloat162float(__float2bfloat16_rn(value));
}

// Q * scale rounded to the dtype, K and V widened (device_pairs.cuh).
__global__ void widen_chunk(PairGeometry g, const std::uint16_t* q, const std::uint16_t* k,
                            const std::uint16_t* v, float scale, std::int64_t first,
                            std::int64_t count, float* query, float* key, float* value) {
  const std::int64_t per_pair = g.query_elements() + g.key_elements();
  for (std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       index < count * per_pair; index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const PairElement e = locate_pair_element(g, first, index);
    if (e.is_query) {
      query[e.chunk_pair * g.query_elements() + e.at] =
          round_to(__fmul_rn(widen_element(q[e.source], g.fp16), scale), g.fp16);
    } else {
      key[e.chunk_pair * g.key_elements() + e.at] = widen_element(k[e.source], g.fp16);
      value[e.chunk_pair * g.key_elements() + e.at] =
          widen_element(v[value_source(g, first, e)], g.fp16);
    }
  }
}

// One thread per row of S ([rows][seq_len_k], row r being query row r % seq_len_q): the visible
// scores rounded to the dtype, softmax in fp32 over them in key order, P rounded, 0 elsewhere.
__global__ void plain_softmax(PairGeometry g, bool causal, std::int64_t rows, float* scores) {
  const std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  float* s = scores + row * g.seq_len_k;
  std::int64_t end = g.seq_len_k;
  if (causal) {
    const std::int64_t last = row % g.seq_len_q + g.seq_len_k - g.seq_len_q;
    end = last < 0 ? 0 : (last + 1 < g.seq_len_k ? last + 1 : g.seq_len_k);
  }
  float row_max = -INFINITY;
  for (std::int64_t j = 0; j < end; ++j) {
    s[j] = round_to(s[j], g.fp16);
    row_max = fmaxf(row_max, s[j]);
  }
  float row_sum = 0.0f;
  for (std::int64_t j = 0; j < end; ++j) {
    s[j] = expf(__fsub_rn(s[j], row_max));
    row_sum = __fadd_rn(row_sum, s[j]);
  }
  for (std::int64_t j = 0; j < end; ++j) s[j] = round_to(__fdiv_rn(s[j], row_sum), g.fp16);
  for (std::int64_t j = end; j < g.seq_len_k; ++j) s[j] = 0.0f;
}

// O rounded to the dtype, from [group_rows][dim] per pair into the compact output (a pair's rows
// are contiguous in [batch][heads][seq_len_q] order).
__global__ void round_output(std::int64_t elements, bool fp16, float* output) {
  const std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (index < elements) output[index] = round_to(output[index], fp16);
}

}  // namespace

bool device_plain_attention_supports(const AttentionProblem& problem,
                                     const DeclaredNumerics& numerics) {
  return features_of(problem) == 0 && !numerics.accumulator_for(problem.dtype) &&
         numerics.probability_dtype(problem) == problem.dtype;
}

void device_plain_attention(const AttentionProblem& problem, const DeviceInputTensors& inputs,
                            DevicePlainAttention& plain) {
  if (!device_plain_attention_supports(problem, {})) {
    throw std::invalid_argument("the device's plain reference computes dense attention only");
  }
  const std::int64_t dim = problem.head_dim, seq_k = problem.seq_len_k;
  const std::int64_t group_rows = problem.group_size() * problem.seq_len_q;
  const std::int64_t pairs = problem.batch * problem.kv_heads;
  float* output = plain.output.reserve(pairs * group_rows * dim);
  if (pairs * group_rows * dim == 0) return;
  if (seq_k == 0) {  // every row sees no key: 0, as the CPU's
    ATTNFUZZ_CUDA_CHECK(cudaMemset(output, 0, pairs * group_rows * dim * sizeof(float)));
    return;
  }
  const std::size_t pair_bytes =
      static_cast<std::size_t>(group_rows * dim + 2 * seq_k * dim + group_rows * seq_k) *
      sizeof(float);
  const std::int64_t chunk =
      pairs_per_chunk(pair_bytes, pairs, kMaxChunkBytes, "plain reference on the device");
  float* query = plain.query.reserve(chunk * group_rows * dim);
  float* key = plain.key.reserve(chunk * seq_k * dim);
  float* value = plain.value.reserve(chunk * seq_k * dim);
  float* scores = plain.scores.reserve(chunk * group_rows * seq_k);
  const PairGeometry geometry(problem);
  const cublasHandle_t handle = cublas_handle();
  const float one = 1.0f, zero = 0.0f;
  for (std::int64_t first = 0; first < pairs; first += chunk) {
    const std::int64_t count = std::min(chunk, pairs - first);
    widen_chunk<<<blocks_for(count * (group_rows + seq_k) * dim, 256, 65535), 256>>>(
        geometry, inputs.q, inputs.k, inputs.v, static_cast<float>(problem.softmax_scale), first,
        count, query, key, value);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
    // Column-major, as in the float64 oracle: S^T = K Q^T, then O^T = V^T P^T.
    ATTNFUZZ_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(seq_k), static_cast<int>(group_rows),
        static_cast<int>(dim), &one, key, static_cast<int>(dim), seq_k * dim, query,
        static_cast<int>(dim), group_rows * dim, &zero, scores, static_cast<int>(seq_k),
        group_rows * seq_k, static_cast<int>(count)));
    plain_softmax<<<blocks_for(count * group_rows, 128), 128>>>(geometry, problem.causal,
                                                                count * group_rows, scores);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
    float* chunk_output = output + first * group_rows * dim;
    ATTNFUZZ_CUBLAS_CHECK(cublasSgemmStridedBatched(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(dim), static_cast<int>(group_rows),
        static_cast<int>(seq_k), &one, value, static_cast<int>(dim), seq_k * dim, scores,
        static_cast<int>(seq_k), group_rows * seq_k, &zero, chunk_output, static_cast<int>(dim),
        group_rows * dim, static_cast<int>(count)));
    round_output<<<blocks_for(count * group_rows * dim, 256), 256>>>(
        count * group_rows * dim, problem.dtype == Dtype::fp16, chunk_output);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }
  for (DeviceBuffer<float>* scratch : {&plain.query, &plain.key, &plain.value, &plain.scores}) {
    scratch->release_above(kKeptScratchBytes);
  }
}

std::vector<float> device_plain_attention(const AttentionProblem& problem,
                                          const AttentionTensors& tensors) {
  const auto q = device_copy_of(tensors.q, static_cast<std::size_t>(q_span(problem)));
  const auto k = device_copy_of(tensors.k, static_cast<std::size_t>(k_span(problem)));
  const auto v = device_copy_of(tensors.v, static_cast<std::size_t>(v_span(problem)));
  DevicePlainAttention plain;
  device_plain_attention(problem, {q.get(), k.get(), v.get()}, plain);
  std::vector<float> output(static_cast<std::size_t>(problem.batch * problem.heads *
                                                     problem.seq_len_q * problem.head_dim));
  if (!output.empty()) plain.output.copy_to_host(output.data(), output.size());
  return output;
}

}  // namespace attnfuzz
