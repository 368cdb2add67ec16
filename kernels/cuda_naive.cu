// SPDX-License-Identifier: BSD-3-Clause
// cuda_naive: the plainest attention kernel a GPU can run, as a second kernel under test.
//
// One block per (query row, head, batch). The row's scores S_j = scale * Q_i . K_j are computed
// in fp32 into shared memory, then softmax in fp32 (max-subtracted), then O_id = sum_j P_j V_jd / l
// with P kept in fp32 (no rounding to the input dtype, unlike the flash kernels). A row that sees
// no key gives 0. Any head_dim up to kMaxHeadDim; seq_len_k up to what shared memory holds.
//
// Shapes: Q, K, V, O are [batch][seq][head][head_dim] by their strides, head_dim contiguous.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <sstream>

#include "core/cuda_check.h"
#include "core/problem_features.h"
#include "kernels/cuda_launch_limits.h"
#include "kernels/kernel_registry.h"

namespace attnfuzz {
namespace {

constexpr int kThreads = 128;
constexpr std::int64_t kMaxHeadDim = 512;
// The row of scores lives in shared memory: 16384 fp32 scores = 64 KiB, under the opt-in limit
// of every architecture the build targets (sm_89 has the smallest, 99 KiB).
constexpr std::int64_t kMaxSeqLenK = 16384;

struct NaiveParams {
  ProblemShape problem;      // shapes, strides, causal
  AttentionTensors tensors;  // device pointers to element [0, 0, 0, 0] of each tensor
  std::int64_t group_size;   // heads / kv_heads
  float softmax_scale;       // the problem's scale, rounded to fp32 once
};

template <typename Element>
struct NaiveElement;
template <>
struct NaiveElement<__half> {
  __device__ static float load(std::uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
  __device__ static std::uint16_t store(float value) {
    return __half_as_ushort(__float2half_rn(value));
  }
};
template <>
struct NaiveElement<__nv_bfloat16> {
  __device__ static float load(std::uint16_t bits) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
  }
  __device__ static std::uint16_t store(float value) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  }
};

// Block-wide reduction through one float per warp; every thread gets the result.
template <typename Combine>
__device__ float block_reduce(float value, float* scratch, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = combine(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) scratch[warp] = value;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) total = combine(total, scratch[w]);
  __syncthreads();  // scratch is free for the next reduction
  return total;
}

// grid (seq_len_q, heads, batch), kThreads threads, seq_len_k floats of shared memory.
template <typename Element>
__global__ void __launch_bounds__(kThreads) naive_forward(const NaiveParams params) {
  const ProblemShape& problem = params.problem;
  using Io = NaiveElement<Element>;
  extern __shared__ float probabilities[];  // [seq_len_k]: scores, then exp(score - max)
  __shared__ float scratch[kThreads / 32];
  const std::int64_t row = blockIdx.x;
  const std::int64_t head = blockIdx.y;
  const std::int64_t batch = blockIdx.z;
  const std::int64_t kv_head = head / params.group_size;
  const std::uint16_t* q_row = params.tensors.q + batch * problem.q_strides.batch +
                               row * problem.q_strides.seq + head * problem.q_strides.head;
  const std::uint16_t* k_head =
      params.tensors.k + batch * problem.k_strides.batch + kv_head * problem.k_strides.head;
  const std::uint16_t* v_head =
      params.tensors.v + batch * problem.v_strides.batch + kv_head * problem.v_strides.head;

  // Its own causal bound, apart from core's keys_about_diagonal: a kernel written independently of
  // the FlashAttention twins and the oracle that judges them (it takes no window).
  std::int64_t visible = problem.seq_len_k;
  if (problem.causal) {
    const std::int64_t last = row + problem.seq_len_k - problem.seq_len_q;
    visible = last < 0 ? 0 : (last + 1 < problem.seq_len_k ? last + 1 : problem.seq_len_k);
  }

  float local_max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < visible; j += kThreads) {
    const std::uint16_t* k_row = k_head + j * problem.k_strides.seq;
    float dot = 0.0f;
    for (std::int64_t d = 0; d < problem.head_dim; ++d)
      dot += Io::load(q_row[d]) * Io::load(k_row[d]);
    probabilities[j] = dot * params.softmax_scale;
    local_max = fmaxf(local_max, probabilities[j]);
  }
  const float row_max =
      block_reduce(local_max, scratch, [](float a, float b) { return fmaxf(a, b); });

  float local_sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < visible; j += kThreads) {
    probabilities[j] = expf(probabilities[j] - row_max);
    local_sum += probabilities[j];
  }
  const float row_sum = block_reduce(local_sum, scratch, [](float a, float b) { return a + b; });

  std::uint16_t* o_row = params.tensors.o + batch * problem.o_strides.batch +
                         row * problem.o_strides.seq + head * problem.o_strides.head;
  for (std::int64_t d = threadIdx.x; d < problem.head_dim; d += kThreads) {
    float accumulator = 0.0f;
    for (std::int64_t j = 0; j < visible; ++j) {
      accumulator += probabilities[j] * Io::load(v_head[j * problem.v_strides.seq + d]);
    }
    o_row[d] = Io::store(visible == 0 ? 0.0f : accumulator / row_sum);
  }
}

template <typename Element>
void launch(const NaiveParams& params) {
  // The row is padded to a multiple of 4 floats: for the last few keys ptxas merges the unrolled
  // loop's loads into one 12-byte shared load that may reach up to 2 floats past seq_len_k
  // (seen on sm_90 with compute-sanitizer memcheck); the padding keeps that read inside the block.
  const std::int64_t padded_keys = (params.problem.seq_len_k + 3) / 4 * 4;
  const int shared_bytes = static_cast<int>(padded_keys * sizeof(float));
  auto* kernel = &naive_forward<Element>;
  ATTNFUZZ_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  const dim3 grid(static_cast<unsigned>(params.problem.seq_len_q),
                  static_cast<unsigned>(params.problem.heads),
                  static_cast<unsigned>(params.problem.batch));
  kernel<<<grid, kThreads, shared_bytes>>>(params);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
}

class CudaNaiveKernel final : public AttentionKernel {
 public:
  std::string_view name() const override { return "cuda_naive"; }
  std::string_view summary() const override {
    return "plain CUDA kernel: one block per query row, fp32 scores and softmax in shared memory";
  }
  std::string capabilities() const override {
    std::ostringstream text;
    text << "fp16, bf16; any head_dim <= " << kMaxHeadDim << "; seq_len_k <= " << kMaxSeqLenK
         << "; causal; GQA/MQA; any strides; batch, heads <= " << kMaxGridYZ;
    return text.str();
  }
  ExecutionSite site() const override { return ExecutionSite::cuda_device; }
  // One block per query row: its arithmetic depends on the lengths and head dim only.
  bool shape_independent_arithmetic() const override { return true; }
  std::span<const PlantedBug> plants() const override { return {}; }

  SupportVerdict supports(const AttentionProblem& problem) const override {
    // The variants are not in this kernel yet: their cases are skipped, naming the feature.
    if (auto reason = unsupported_feature_reason(name(), problem, 0)) {
      return SupportVerdict::no(*reason);
    }
    if (problem.head_dim > kMaxHeadDim) {
      return SupportVerdict::no("cuda_naive supports head_dim up to " +
                                std::to_string(kMaxHeadDim));
    }
    if (problem.seq_len_k > kMaxSeqLenK) {
      return SupportVerdict::no(
          "cuda_naive keeps a row of scores in shared memory: seq_len_k up to " +
          std::to_string(kMaxSeqLenK));
    }
    if (problem.batch > kMaxGridYZ || problem.heads > kMaxGridYZ) {
      return SupportVerdict::no("cuda_naive launches one block row per head and batch: at most " +
                                std::to_string(kMaxGridYZ) + " of each");
    }
    return SupportVerdict::yes();
  }

  void forward(const AttentionProblem& problem, const AttentionTensors& tensors,
               PlantedBug /*plant: none carried*/) const override {
    NaiveParams params{};
    params.problem = problem;
    params.tensors = tensors;
    params.group_size = problem.group_size();
    params.softmax_scale = static_cast<float>(problem.softmax_scale);
    if (problem.dtype == Dtype::fp16) {
      launch<__half>(params);
    } else {
      launch<__nv_bfloat16>(params);
    }
    ATTNFUZZ_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
};

}  // namespace

const AttentionKernel& cuda_naive_kernel() {
  static const CudaNaiveKernel kernel;
  return kernel;
}

}  // namespace attnfuzz
