// SPDX-License-Identifier: BSD-3-Clause
// cuda_flash's backward: cpu_flash's backward (kernels/cpu_flash_backward.cpp) on the device, in
// the twin's stages under its names, a thread where the twin has a loop iteration, with the twin's
// fp32 arithmetic and roundings (so that the same bound holds), its plants at the same places:
//   load_query_head       D_i = rowsum(dO_i * O_i), one thread per (batch, head, query row)
//   add_key_tile          one block per (batch, kv head, key tile of block_n keys), one thread
//                         per key j of the tile; for each query head of the group and each query
//                         row that sees a key of the tile, in order: S, P = exp(S - L_i),
//                         dV_j += round(P) dO_i, dP, dS rounded to the dtype, dK_j += dS q_i;
//                         then the tile's part of dQ_i (its keys in order, one thread per
//                         dimension) added to dQ_i's fp32 sum atomically, in whatever order the
//                         tiles come (FlashAttention-2's dQ)
//   store_key_gradients   dK_j = round(scale dK_j), dV_j = round(dV_j), by the key's thread
//   store_query_gradients dQ = round(scale dQ)
// Asked for a deterministic dQ (BackwardTensors::deterministic), query_gradients computes it
// instead: one thread per query row, over the keys in order, as the twin sums, and the key tiles
// add nothing to it. Written to be checked rather than fast: scalar fp32 arithmetic, each thread's
// rows of head_dim floats in local arrays.
#include "kernels/cuda_flash_backward.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/cuda_check.h"
#include "core/device_array.h"
#include "core/dtype.h"
#include "kernels/flash_tile_traits.h"

namespace attnfuzz {
namespace {

constexpr float kLog2E = 1.44269504f;
constexpr int kRowThreads = 128;  // threads per block of the one-thread-per-row kernels

// Everything the kernels read; the problem's host helpers are not called on the device.
struct BackwardParams {
  ProblemShape problem;
  AttentionTensors tensors;   // device pointers: Q, K, V, O, the log-sum-exp, the index arrays
  BackwardTensors gradients;  // device pointers: dO, dQ, dK, dV
  float softmax_scale;        // the problem's scale, rounded to fp32 once
  PlantedBug plant;
  std::int64_t key_tiles;  // block_n keys each, of the longest key sequence
  float* row_dots;         // D_i, [batch][heads][seq_len_q]
  float* dq_sums;  // dQ's fp32 sums, [batch][heads][seq_len_q][head_dim]; null: deterministic
};

__device__ inline bool planted(const BackwardParams& p, PlantedBug bug) {
  return p.plant == bug;
}

__device__ inline std::int64_t seq_q_of(const BackwardParams& p, std::int64_t b) {
  return sequence_length(p.problem.varlen_q, p.problem.seq_len_q, p.tensors.cu_seqlens_q, b);
}
__device__ inline std::int64_t seq_k_of(const BackwardParams& p, std::int64_t b) {
  return sequence_length(p.problem.varlen_k, p.problem.seq_len_k, p.tensors.cu_seqlens_k, b);
}

// Row (b, h, i)'s index in [batch][heads][seq_len_q].
__device__ inline std::int64_t row_index(const BackwardParams& p, std::int64_t b, std::int64_t h,
                                         std::int64_t i) {
  return (b * p.problem.heads + h) * p.problem.seq_len_q + i;
}

// Query row `row` of [batch][heads][seq_len_q] as (b, h, i).
struct QueryRowPlace {
  std::int64_t b, h, i;
};
__device__ inline QueryRowPlace query_row_place(const BackwardParams& p, std::int64_t row) {
  return {row / (p.problem.seq_len_q * p.problem.heads),
          row / p.problem.seq_len_q % p.problem.heads, row % p.problem.seq_len_q};
}

// Element [b, i, h, 0] of Q and dQ (q_strides) or of O and dO (o_strides).
__device__ inline std::int64_t query_offset(const BackwardParams& p, const TensorStrides& strides,
                                            std::int64_t b, std::int64_t i, std::int64_t h) {
  return query_row_offset(p.problem, strides, p.tensors.cu_seqlens_q, b, i) + h * strides.head;
}

// Element [b, j, kv, 0] of K, V, dK or dV.
__device__ inline std::int64_t key_offset(const BackwardParams& p, const TensorStrides& strides,
                                          std::int64_t b, std::int64_t j, std::int64_t kv) {
  return key_row_offset(p.problem, strides, p.tensors.cu_seqlens_k, nullptr, b, j) +
         kv * strides.head;
}

// Where K's or V's row (b, j, kv) is read: backward_varlen_key_offset reads a packed sequence's
// keys from one row early (the previous sequence's last; none before the first row).
__device__ inline std::int64_t key_read_offset(const BackwardParams& p,
                                               const TensorStrides& strides, std::int64_t b,
                                               std::int64_t j, std::int64_t kv) {
  const bool early = planted(p, PlantedBug::backward_varlen_key_offset) && p.problem.varlen_k &&
                     b > 0 && p.tensors.cu_seqlens_k[b] > 0;
  return key_offset(p, strides, b, j, kv) - (early ? strides.seq : 0);
}

__device__ inline float round_to(float value, Dtype dtype) {
  return dtype_to_float(float_to_dtype(value, dtype), dtype);
}

template <int kHeadDim>
__device__ inline void widen_row(const std::uint16_t* row, Dtype dtype, float* out) {
  for (int d = 0; d < kHeadDim; ++d) out[d] = dtype_to_float(row[d], dtype);
}

// The keys row i sees; backward_mask_not_applied: every key of the sequence.
__device__ inline KeyRange keys_seen(const BackwardParams& p, std::int64_t i, std::int64_t seq_q,
                                     std::int64_t seq_k) {
  if (planted(p, PlantedBug::backward_mask_not_applied)) return KeyRange{0, seq_k};
  return visible_keys(p.problem, i, seq_q, seq_k);
}

__device__ inline float log_sum_exp_of(const BackwardParams& p, std::int64_t b, std::int64_t h,
                                       std::int64_t i) {
  return p.tensors.lse[lse_row_offset(p.problem, p.tensors.cu_seqlens_q, b, i) +
                       h * p.problem.lse_strides.head];
}

// Grid-stride indices over `count`.
#define ATTNFUZZ_GRID_STRIDE(index, count)                                                    \
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
       index < (count); index += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// The twin's load_query_head, its part on the device: D_i = rowsum(dO_i * O_i) in fp32.
__global__ void load_query_head(const BackwardParams p) {
  const ProblemShape& problem = p.problem;
  ATTNFUZZ_GRID_STRIDE(row, problem.batch * problem.heads * problem.seq_len_q) {
    const auto [b, h, i] = query_row_place(p, row);
    const std::int64_t seq_q = seq_q_of(p, b);
    if (i >= seq_q) continue;
    const std::uint16_t* grad_output =
        p.gradients.grad_output + query_offset(p, problem.o_strides, b, i, h);
    // backward_rowsum_from_next_row: the next row's O (the last row keeps its own).
    const std::int64_t o_row =
        planted(p, PlantedBug::backward_rowsum_from_next_row) && i + 1 < seq_q ? i + 1 : i;
    const std::uint16_t* output = p.tensors.o + query_offset(p, problem.o_strides, b, o_row, h);
    float dot = 0.0f;
    for (std::int64_t d = 0; d < problem.head_dim; ++d) {
      dot +=
          dtype_to_float(grad_output[d], problem.dtype) * dtype_to_float(output[d], problem.dtype);
    }
    p.row_dots[row] = planted(p, PlantedBug::backward_rowsum_dropped) ? 0.0f : dot;
  }
}

// One (query row, key) pair of the twin's add_row_of_key_tile: P and dS, from q_i, dO_i, k_j and
// v_j widened to fp32.
struct PairTerms {
  float probability;
  float score_gradient;  // rounded to the dtype
};

template <int kHeadDim>
__device__ PairTerms pair_terms(const BackwardParams& p, std::int64_t h, std::int64_t i,
                                std::int64_t j, std::int64_t seq_q, std::int64_t seq_k,
                                const float* q, const float* grad_output, const float* k,
                                const float* v, float lse, float row_dot) {
  const ProblemShape& problem = p.problem;
  float dot = 0.0f;
  for (int d = 0; d < kHeadDim; ++d) dot += q[d] * k[d];
  float score = dot * p.softmax_scale;
  float cap_slope = 1.0f;
  const float softcap = static_cast<float>(problem.softcap);
  if (softcap > 0.0f) {
    const float tanh_value = tanhf(score / softcap);
    score = softcap * tanh_value;
    if (!planted(p, PlantedBug::backward_softcap_slope_forgotten)) {
      cap_slope = 1.0f - tanh_value * tanh_value;
    }
  }
  if (problem.alibi) {
    score -= p.tensors.alibi_slopes[h] * static_cast<float>(alibi_distance(i, j, seq_q, seq_k));
  }
  const float probability =
      planted(p, PlantedBug::backward_lse_log2) ? exp2f(score * kLog2E - lse) : expf(score - lse);
  float grad_probability = 0.0f;
  for (int d = 0; d < kHeadDim; ++d) grad_probability += grad_output[d] * v[d];
  return {probability,
          round_to(probability * (grad_probability - row_dot) * cap_slope, problem.dtype)};
}

// The twin's key-tile loop for one (batch, kv head, key tile), blockIdx.x running over them key
// tile fastest; then store_key_gradients for the tile's keys.
template <int kHeadDim, int kBlockN>
__global__ void __launch_bounds__(kBlockN) add_key_tile(const BackwardParams p) {
  __shared__ float query[kHeadDim];
  __shared__ float grad_output[kHeadDim];
  __shared__ float score_gradients[kBlockN];
  const ProblemShape& problem = p.problem;
  const std::int64_t tile = blockIdx.x % p.key_tiles;
  const std::int64_t kv = blockIdx.x / p.key_tiles % problem.kv_heads;
  const std::int64_t b = blockIdx.x / (p.key_tiles * problem.kv_heads);
  const std::int64_t seq_q = seq_q_of(p, b);
  const std::int64_t seq_k = seq_k_of(p, b);
  const std::int64_t first_key = tile * kBlockN;
  if (first_key >= seq_k) return;  // the whole block: past this sequence's keys
  const std::int64_t end_key = first_key + kBlockN < seq_k ? first_key + kBlockN : seq_k;
  const std::int64_t j = first_key + threadIdx.x;
  const bool has_key = j < end_key;
  const std::int64_t group = problem.heads / problem.kv_heads;
  float key[kHeadDim], value[kHeadDim], dk[kHeadDim], dv[kHeadDim];
  for (int d = 0; d < kHeadDim; ++d) dk[d] = dv[d] = 0.0f;
  for (std::int64_t h = 0; h < problem.heads; ++h) {
    // backward_gqa_modulo: head h's part of dK and dV goes to kv head h % kv_heads, not h / group;
    // its scores (and its dQ) still use its own kv head's keys.
    const std::int64_t target =
        planted(p, PlantedBug::backward_gqa_modulo) ? h % problem.kv_heads : h / group;
    if (target != kv) continue;
    const std::int64_t source = h / group;
    if (has_key) {
      widen_row<kHeadDim>(p.tensors.k + key_read_offset(p, problem.k_strides, b, j, source),
                          problem.dtype, key);
      widen_row<kHeadDim>(p.tensors.v + key_read_offset(p, problem.v_strides, b, j, source),
                          problem.dtype, value);
    }
    for (std::int64_t i = 0; i < seq_q; ++i) {
      // The same for every thread of the block: a row skipped is skipped by all.
      const float lse = log_sum_exp_of(p, b, h, i);
      const KeyRange seen = keys_seen(p, i, seq_q, seq_k);
      if (lse == -INFINITY || (seen.first > first_key ? seen.first : first_key) >=
                                  (seen.end < end_key ? seen.end : end_key)) {
        continue;
      }
      __syncthreads();  // every thread is done with the last row's shared values
      for (int d = threadIdx.x; d < kHeadDim; d += kBlockN) {
        query[d] = dtype_to_float(p.tensors.q[query_offset(p, problem.q_strides, b, i, h) + d],
                                  problem.dtype);
        grad_output[d] =
            dtype_to_float(p.gradients.grad_output[query_offset(p, problem.o_strides, b, i, h) + d],
                           problem.dtype);
      }
      __syncthreads();
      float score_gradient = 0.0f;
      if (has_key && j >= seen.first && j < seen.end) {
        const PairTerms terms =
            pair_terms<kHeadDim>(p, h, i, j, seq_q, seq_k, query, grad_output, key, value, lse,
                                 p.row_dots[row_index(p, b, h, i)]);
        const float rounded_probability = round_to(terms.probability, problem.dtype);
        for (int d = 0; d < kHeadDim; ++d) {
          dv[d] += rounded_probability * grad_output[d];
          dk[d] += terms.score_gradient * query[d];
        }
        score_gradient = terms.score_gradient;
      }
      if (p.dq_sums == nullptr) continue;  // the deterministic dQ is query_gradients'
      score_gradients[threadIdx.x] = score_gradient;
      __syncthreads();
      // The tile's part of dQ_i, sum_j dS_ij K_j over its keys in order: one thread a dimension.
      for (int d = threadIdx.x; d < kHeadDim; d += kBlockN) {
        float part = 0.0f;
        for (std::int64_t n = 0; n < end_key - first_key; ++n) {
          const std::uint16_t* key_row =
              p.tensors.k + key_read_offset(p, problem.k_strides, b, first_key + n, source);
          part += score_gradients[n] * dtype_to_float(key_row[d], problem.dtype);
        }
        float* sum = &p.dq_sums[row_index(p, b, h, i) * kHeadDim + d];
        // backward_dq_last_key_tile_only: '=' written for '+=', each tile's part overwriting the
        // last's, as the twin's: what stays is the sequence's last tile's.
        if (!planted(p, PlantedBug::backward_dq_last_key_tile_only)) {
          atomicAdd(sum, part);
        } else if (tile == (seq_k - 1) / kBlockN) {
          *sum = part;
        }
      }
    }
  }
  if (!has_key) return;
  // store_key_gradients: dK = round(scale dK), dV = round(dV).
  const float dk_scale = planted(p, PlantedBug::backward_dk_unscaled) ? 1.0f : p.softmax_scale;
  std::uint16_t* dk_row = p.gradients.dk + key_offset(p, problem.k_strides, b, j, kv);
  std::uint16_t* dv_row = p.gradients.dv + key_offset(p, problem.v_strides, b, j, kv);
  for (int d = 0; d < kHeadDim; ++d) {
    dk_row[d] = float_to_dtype(dk[d] * dk_scale, problem.dtype);
    dv_row[d] = float_to_dtype(dv[d], problem.dtype);
  }
}

// dQ = round(scale dQ) from the key tiles' atomic sums, one thread per element.
__global__ void store_query_gradients(const BackwardParams p) {
  const ProblemShape& problem = p.problem;
  const std::int64_t dim = problem.head_dim;
  ATTNFUZZ_GRID_STRIDE(element, problem.batch * problem.heads * problem.seq_len_q * dim) {
    const std::int64_t row = element / dim;
    const auto [b, h, i] = query_row_place(p, row);
    if (i >= seq_q_of(p, b)) continue;
    p.gradients.dq[query_offset(p, problem.q_strides, b, i, h) + element % dim] =
        float_to_dtype(p.dq_sums[element] * p.softmax_scale, problem.dtype);
  }
}

// The deterministic dQ: one thread per query row, its keys in order tile by tile as the twin
// sums them, then dQ = round(scale dQ).
template <int kHeadDim, int kBlockN>
__global__ void query_gradients(const BackwardParams p) {
  const ProblemShape& problem = p.problem;
  ATTNFUZZ_GRID_STRIDE(row, problem.batch * problem.heads * problem.seq_len_q) {
    const auto [b, h, i] = query_row_place(p, row);
    const std::int64_t seq_q = seq_q_of(p, b);
    if (i >= seq_q) continue;
    const std::int64_t seq_k = seq_k_of(p, b);
    const std::int64_t kv = h / (problem.heads / problem.kv_heads);
    float query[kHeadDim], grad_output[kHeadDim], key[kHeadDim], value[kHeadDim], dq[kHeadDim];
    widen_row<kHeadDim>(p.tensors.q + query_offset(p, problem.q_strides, b, i, h), problem.dtype,
                        query);
    widen_row<kHeadDim>(p.gradients.grad_output + query_offset(p, problem.o_strides, b, i, h),
                        problem.dtype, grad_output);
    for (int d = 0; d < kHeadDim; ++d) dq[d] = 0.0f;
    const float lse = log_sum_exp_of(p, b, h, i);
    const KeyRange seen = keys_seen(p, i, seq_q, seq_k);
    for (std::int64_t first_key = 0; lse != -INFINITY && first_key < seq_k; first_key += kBlockN) {
      // backward_dq_last_key_tile_only: each tile's part overwrites the last's.
      if (planted(p, PlantedBug::backward_dq_last_key_tile_only)) {
        for (int d = 0; d < kHeadDim; ++d) dq[d] = 0.0f;
      }
      const std::int64_t first = seen.first > first_key ? seen.first : first_key;
      const std::int64_t end_key = first_key + kBlockN < seq_k ? first_key + kBlockN : seq_k;
      const std::int64_t end = seen.end < end_key ? seen.end : end_key;
      for (std::int64_t j = first; j < end; ++j) {
        widen_row<kHeadDim>(p.tensors.k + key_read_offset(p, problem.k_strides, b, j, kv),
                            problem.dtype, key);
        widen_row<kHeadDim>(p.tensors.v + key_read_offset(p, problem.v_strides, b, j, kv),
                            problem.dtype, value);
        const PairTerms terms = pair_terms<kHeadDim>(p, h, i, j, seq_q, seq_k, query, grad_output,
                                                     key, value, lse, p.row_dots[row]);
        for (int d = 0; d < kHeadDim; ++d) dq[d] += terms.score_gradient * key[d];
      }
    }
    std::uint16_t* dq_row = p.gradients.dq + query_offset(p, problem.q_strides, b, i, h);
    for (int d = 0; d < kHeadDim; ++d) {
      dq_row[d] = float_to_dtype(dq[d] * p.softmax_scale, problem.dtype);
    }
  }
}

// add_key_tile's grid is one block per (batch, kv head, key tile) in grid x.
constexpr std::int64_t kMaxKeyTileBlocks = 0x7FFFFFFF;

std::string too_many_key_tiles_reason(const ProblemShape& problem) {
  return "cuda_flash's backward launches one block per (batch, kv head, key tile): more than " +
         std::to_string(kMaxKeyTileBlocks) + " for batch " + std::to_string(problem.batch) +
         ", kv_heads " + std::to_string(problem.kv_heads) + " and seq_len_k " +
         std::to_string(problem.seq_len_k);
}

// Blocks of `threads` for a grid-stride loop over `count` (at least one).
unsigned blocks_for(std::int64_t count, int threads) {
  const std::int64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 1 << 20));
}

template <int kHeadDim>
void launch(const BackwardParams& params) {
  constexpr int kBlockN = find_tile_config(kHeadDim)->block_n;
  const ProblemShape& problem = params.problem;
  const std::int64_t rows = problem.batch * problem.heads * problem.seq_len_q;
  load_query_head<<<blocks_for(rows, kRowThreads), kRowThreads>>>(params);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  const std::int64_t tiles = problem.batch * problem.kv_heads * params.key_tiles;
  if (tiles > kMaxKeyTileBlocks) throw std::runtime_error(too_many_key_tiles_reason(problem));
  if (tiles > 0) {  // none without keys: dQ is then 0, and there is no dK or dV
    add_key_tile<kHeadDim, kBlockN><<<static_cast<unsigned>(tiles), kBlockN>>>(params);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }
  if (params.dq_sums != nullptr) {
    store_query_gradients<<<blocks_for(rows * kHeadDim, kRowThreads), kRowThreads>>>(params);
  } else {
    query_gradients<kHeadDim, kBlockN><<<blocks_for(rows, kRowThreads), kRowThreads>>>(params);
  }
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

// One launcher per tile configuration of flash_tile_traits.h, as the forward has.
struct BackwardLauncher {
  int head_dim;
  void (*launch)(const BackwardParams&);
};
constexpr BackwardLauncher kLaunchers[] = {
    {32, launch<32>}, {64, launch<64>}, {96, launch<96>}, {128, launch<128>}, {256, launch<256>},
};
static_assert(std::size(kLaunchers) == std::size(kFlashTileConfigs),
              "every tile configuration has a backward launcher");

}  // namespace

std::optional<std::string> cuda_flash_backward_unsupported(const AttentionProblem& problem) {
  if (problem.paged()) return "cuda_flash's backward has no paged K/V";
  const FlashTileConfig* tiles = find_tile_config(problem.head_dim);
  if (tiles == nullptr) return std::nullopt;  // the forward's support names it
  const std::int64_t key_tiles = (problem.seq_len_k + tiles->block_n - 1) / tiles->block_n;
  if (problem.batch * problem.kv_heads * key_tiles > kMaxKeyTileBlocks) {
    return too_many_key_tiles_reason(problem);
  }
  return std::nullopt;
}

void cuda_flash_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                         const BackwardTensors& gradients, PlantedBug plant) {
  if (std::optional<std::string> reason = cuda_flash_backward_unsupported(problem)) {
    throw std::runtime_error(*reason);
  }
  const FlashTileConfig* tiles = find_tile_config(problem.head_dim);
  const BackwardLauncher* launcher = nullptr;
  for (const BackwardLauncher& entry : kLaunchers) {
    if (entry.head_dim == problem.head_dim) launcher = &entry;
  }
  if (tiles == nullptr || launcher == nullptr) {
    throw std::runtime_error(no_tile_config_reason("cuda_flash", problem.head_dim));
  }
  const std::int64_t rows = problem.batch * problem.heads * problem.seq_len_q;
  if (tensors.lse == nullptr && rows > 0) {
    throw std::runtime_error("cuda_flash's backward needs the forward's log-sum-exp");
  }
  BackwardParams params{};
  params.problem = problem;
  params.tensors = tensors;
  params.gradients = gradients;
  params.softmax_scale = static_cast<float>(problem.softmax_scale);
  params.plant = plant;
  params.key_tiles = (problem.seq_len_k + tiles->block_n - 1) / tiles->block_n;
  const DeviceArray<float> row_dots(static_cast<std::size_t>(std::max<std::int64_t>(rows, 1)));
  params.row_dots = row_dots.get();
  std::optional<DeviceArray<float>> dq_sums;
  if (!gradients.deterministic) {
    const auto elements =
        static_cast<std::size_t>(std::max<std::int64_t>(rows, 1) * problem.head_dim);
    dq_sums.emplace(elements);
    ATTNFUZZ_CUDA_CHECK(cudaMemset(dq_sums->get(), 0, elements * sizeof(float)));
    params.dq_sums = dq_sums->get();
  }
  launcher->launch(params);
}

}  // namespace attnfuzz
