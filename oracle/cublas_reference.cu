// SPDX-License-Identifier: BSD-3-Clause
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device_array.h"
#include "core/device_launch.cuh"
#include "oracle/cublas_handle.h"
#include "oracle/cublas_reference.h"
#include "oracle/device_pairs.cuh"

namespace attnfuzz {
namespace {

constexpr int kSoftmaxThreads = 128;
// Device memory one chunk may take: half of what is free, and never more than this, so that the
// oracle leaves room for the kernel's buffers (its scratch is given back after the case,
// kKeptScratchBytes).
constexpr std::size_t kMaxChunkBytes = std::size_t{8} << 30;

// Block-wide reduction in double; every thread gets the result.
template <typename Combine>
__device__ double block_reduce(double value, double* scratch, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = combine(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  double total = scratch[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) total = combine(total, scratch[w]);
  __syncthreads();
  return total;
}

// One block per row of S ([rows][seq_len_k]): keeps exp(s - max) for the visible keys, 0 for the
// rest, and writes 1 / sum (0 for a fully masked row) and the log-sum-exp max + log(sum) (-inf for
// a fully masked row). Row r is query row r % seq_len_q.
__global__ void __launch_bounds__(kSoftmaxThreads)
    masked_softmax(double* scores, double* inverse_row_sum, double* log_sum_exp,
                   std::int64_t seq_len_q, std::int64_t seq_len_k, bool causal) {
  __shared__ double scratch[kSoftmaxThreads / 32];
  const std::int64_t row = blockIdx.x;
  double* row_scores = scores + row * seq_len_k;
  std::int64_t visible = seq_len_k;
  if (causal) {
    const std::int64_t last = row % seq_len_q + seq_len_k - seq_len_q;
    visible = last < 0 ? 0 : (last + 1 < seq_len_k ? last + 1 : seq_len_k);
  }
  double local_max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < visible; j += kSoftmaxThreads) {
    local_max = fmax(local_max, row_scores[j]);
  }
  const double row_max =
      block_reduce(local_max, scratch, [](double a, double b) { return fmax(a, b); });
  double local_sum = 0.0;
  for (std::int64_t j = threadIdx.x; j < seq_len_k; j += kSoftmaxThreads) {
    const double probability = j < visible ? exp(row_scores[j] - row_max) : 0.0;
    row_scores[j] = probability;
    local_sum += probability;
  }
  const double row_sum = block_reduce(local_sum, scratch, [](double a, double b) { return a + b; });
  if (threadIdx.x == 0) {
    inverse_row_sum[row] = visible == 0 ? 0.0 : 1.0 / row_sum;
    log_sum_exp[row] = visible == 0 ? -INFINITY : row_max + log(row_sum);
  }
}

// The widened inputs of pairs first .. first + count - 1 (device_pairs.cuh), the value beside its
// magnitude: value [seq_len_k][2 * head_dim] ([V | |V|]: one DGEMM gives O and its error scale).
__global__ void widen_pairs(PairGeometry g, const std::uint16_t* q, const std::uint16_t* k,
                            const std::uint16_t* v, std::int64_t first, std::int64_t count,
                            double* query, double* key, double* value) {
  const std::int64_t per_pair = g.query_elements() + g.key_elements();
  for (std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       index < count * per_pair; index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const PairElement e = locate_pair_element(g, first, index);
    if (e.is_query) {
      query[e.chunk_pair * g.query_elements() + e.at] = widen_element(q[e.source], g.fp16);
    } else {
      key[e.chunk_pair * g.key_elements() + e.at] = widen_element(k[e.source], g.fp16);
      const double v_value = widen_element(v[value_source(g, first, e)], g.fp16);
      double* value_row = value + e.chunk_pair * 2 * g.key_elements() + e.row * 2 * g.head_dim;
      value_row[e.dim] = v_value;
      value_row[g.head_dim + e.dim] = fabs(v_value);
    }
  }
}

// sqrt of the sum of squares in index order: the CPU oracle's norm, operation for operation (this
// file is compiled without fused multiply-adds).
__device__ double euclidean_norm(const double* values, std::int64_t count) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < count; ++i) sum += values[i] * values[i];
  return sqrt(sum);
}

// The tolerance's data scales of a chunk's pairs: the column sums of |V| (one thread per pair and
// dim) and the largest key norm (one thread per pair), then scale * |Q_i| * max_j |K_j| (one
// thread per query row).
__global__ void value_sums_and_key_norms(PairGeometry g, std::int64_t first, std::int64_t count,
                                         const double* key, const double* value,
                                         double* value_abs_sum, double* max_key_norm) {
  const std::int64_t dim = g.head_dim;
  const std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (index >= count * (dim + 1)) return;
  const std::int64_t c = index / (dim + 1), d = index % (dim + 1);
  if (d == dim) {
    double largest = 0.0;
    for (std::int64_t j = 0; j < g.seq_len_k; ++j) {
      largest = fmax(largest, euclidean_norm(key + (c * g.seq_len_k + j) * dim, dim));
    }
    max_key_norm[c] = largest;
    return;
  }
  double sum = 0.0;
  for (std::int64_t j = 0; j < g.seq_len_k; ++j) {
    sum += value[c * 2 * g.seq_len_k * dim + j * 2 * dim + dim + d];
  }
  value_abs_sum[(first + c) * dim + d] = sum;
}

__global__ void score_scales(PairGeometry g, double softmax_scale, std::int64_t first,
                             std::int64_t count, const double* query, const double* max_key_norm,
                             double* score_scale) {
  const std::int64_t group_rows = g.group * g.seq_len_q;
  const std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (row >= count * group_rows) return;
  score_scale[first * group_rows + row] = softmax_scale *
                                          euclidean_norm(query + row * g.head_dim, g.head_dim) *
                                          max_key_norm[row / group_rows];
}

// O and A divided by the row sums, into the reference's compact arrays. A pair's rows are
// contiguous in the compact [batch][heads][seq_len_q] order: its query heads are
// kv_head * group .. kv_head * group + group - 1 of its batch.
__global__ void normalize_rows(std::int64_t first_row, std::int64_t rows, std::int64_t dim,
                               const double* result, const double* inverse, const double* lse,
                               DeviceReferenceArrays out) {
  const std::int64_t index = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (index >= rows * dim) return;
  const std::int64_t row = index / dim, d = index % dim;
  const std::int64_t row_index = first_row + row;
  const double inverse_sum = inverse[row];
  if (d == 0) {
    out.inverse_row_sum[row_index] = inverse_sum;
    out.log_sum_exp[row_index] = lse[row];
  }
  out.output[row_index * dim + d] = result[row * 2 * dim + d] * inverse_sum;
  out.magnitude[row_index * dim + d] = result[row * 2 * dim + dim + d] * inverse_sum;
}

// The largest |x| of `values`, NaN left out as std::max leaves it out: the bits of non-negative
// doubles order as their values.
__global__ void max_abs(const double* values, std::int64_t count, unsigned long long* largest) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double magnitude = fabs(values[i]);
    if (magnitude == magnitude) {
      local = max(local, static_cast<unsigned long long>(__double_as_longlong(magnitude)));
    }
  }
  atomicMax(largest, local);
}

// Per (batch, kv head) pair, the doubles of each array: query, key, value with |value|, scores,
// result with magnitude, and the inverse row sums.
struct PairSizes {
  std::int64_t group_rows;  // query rows of one pair
  std::int64_t query, key, value, scores, result;

  explicit PairSizes(const AttentionProblem& problem)
      : group_rows(problem.group_size() * problem.seq_len_q),
        query(group_rows * problem.head_dim),
        key(problem.seq_len_k * problem.head_dim),
        value(problem.seq_len_k * 2 * problem.head_dim),
        scores(group_rows * problem.seq_len_k),
        result(group_rows * 2 * problem.head_dim) {}

  std::size_t bytes() const {
    return static_cast<std::size_t>(query + key + value + scores + result + 2 * group_rows + 1) *
           sizeof(double);
  }
};

// The device arrays of one chunk of pairs, and the stages that take a chunk through them in
// order: widen, data scales, scores, softmax, values, normalize.
class ChunkPipeline {
 public:
  ChunkPipeline(const AttentionProblem& problem, const PairSizes& sizes, std::int64_t chunk,
                DeviceReferenceWorkspace& workspace)
      : problem_(problem),
        geometry_(problem),
        sizes_(sizes),
        query_(workspace.query.reserve(chunk * sizes.query)),
        key_(workspace.key.reserve(chunk * sizes.key)),
        value_(workspace.value.reserve(chunk * sizes.value)),
        scores_(workspace.scores.reserve(chunk * sizes.scores)),
        result_(workspace.result.reserve(chunk * sizes.result)),
        inverse_(workspace.inverse.reserve(chunk * sizes.group_rows)),
        log_sum_exp_(workspace.log_sum_exp.reserve(chunk * sizes.group_rows)),
        max_key_norm_(workspace.max_key_norm.reserve(chunk)),
        handle_(cublas_handle()) {}

  void widen_chunk(const DeviceInputTensors& inputs, std::int64_t first, std::int64_t count) {
    const std::int64_t work = count * (sizes_.query + sizes_.key);
    widen_pairs<<<blocks_for(work, 256, 65535), 256>>>(geometry_, inputs.q, inputs.k, inputs.v,
                                                       first, count, query_, key_, value_);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

  void data_scales(std::int64_t first, std::int64_t count, DeviceReferenceArrays& out) {
    const std::int64_t dim = problem_.head_dim;
    value_sums_and_key_norms<<<blocks_for(count * (dim + 1), 128), 128>>>(
        geometry_, first, count, key_, value_, out.value_abs_sum, max_key_norm_);
    score_scales<<<blocks_for(count * sizes_.group_rows, 128), 128>>>(
        geometry_, problem_.softmax_scale, first, count, query_, max_key_norm_, out.score_scale);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

  // cuBLAS is column-major: a row-major [m][n] matrix is its column-major transpose. So the
  // row-major S = Q K^T ([group_rows][seq_k]) is computed as the column-major S^T = K Q^T.
  void scores_for_chunk(std::int64_t count) {
    const double zero = 0.0, scale = problem_.softmax_scale;
    const std::int64_t dim = problem_.head_dim;
    const std::int64_t seq_k = problem_.seq_len_k;
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(seq_k),
        static_cast<int>(sizes_.group_rows), static_cast<int>(dim), &scale, key_,
        static_cast<int>(dim), sizes_.key, query_, static_cast<int>(dim), sizes_.query, &zero,
        scores_, static_cast<int>(seq_k), sizes_.scores, static_cast<int>(count)));
  }

  void softmax_chunk(std::int64_t count) {
    masked_softmax<<<static_cast<unsigned>(count * sizes_.group_rows), kSoftmaxThreads>>>(
        scores_, inverse_, log_sum_exp_, problem_.seq_len_q, problem_.seq_len_k, problem_.causal);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

  // Row-major [O | A] = P [V | |V|] ([group_rows][2 dim]) as column-major [V | |V|]^T P^T.
  void accumulate_values(std::int64_t count) {
    const double one = 1.0, zero = 0.0;
    const std::int64_t dim = problem_.head_dim;
    const std::int64_t seq_k = problem_.seq_len_k;
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(2 * dim),
        static_cast<int>(sizes_.group_rows), static_cast<int>(seq_k), &one, value_,
        static_cast<int>(2 * dim), sizes_.value, scores_, static_cast<int>(seq_k), sizes_.scores,
        &zero, result_, static_cast<int>(2 * dim), sizes_.result, static_cast<int>(count)));
  }

  void normalize_chunk(std::int64_t first, std::int64_t count, DeviceReferenceArrays& out) {
    const std::int64_t rows = count * sizes_.group_rows;
    normalize_rows<<<blocks_for(rows * problem_.head_dim, 256), 256>>>(
        first * sizes_.group_rows, rows, problem_.head_dim, result_, inverse_, log_sum_exp_, out);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

 private:
  const AttentionProblem& problem_;
  const PairGeometry geometry_;
  const PairSizes sizes_;
  double *query_, *key_, *value_, *scores_, *result_, *inverse_, *log_sum_exp_, *max_key_norm_;
  const cublasHandle_t handle_;
};

template <typename Buffer>
void download(const DeviceBuffer<double>& device, Buffer& host) {
  if (host.size() > 0) device.copy_to_host(host.data(), host.size());
}

}  // namespace

DeviceReferenceView DeviceReference::view() const {
  return {output.get(),      magnitude.get(),  inverse_row_sum.get(),
          score_scale.get(), bias_scale.get(), value_abs_sum.get()};
}

void cublas_reference_on_device(const AttentionProblem& problem, const DeviceInputTensors& inputs,
                                DeviceReference& reference) {
  if (!cublas_reference_supports(problem)) {
    throw std::invalid_argument("the cuBLAS oracle computes dense attention only");
  }
  const std::int64_t pairs = problem.batch * problem.kv_heads;
  const std::int64_t rows = problem.batch * problem.heads * problem.seq_len_q;
  const std::int64_t dim = problem.head_dim;
  DeviceReferenceArrays out{
      reference.output.reserve(rows * dim),        reference.magnitude.reserve(rows * dim),
      reference.inverse_row_sum.reserve(rows),     reference.score_scale.reserve(rows),
      reference.bias_scale.reserve(rows),          reference.log_sum_exp.reserve(rows),
      reference.value_abs_sum.reserve(pairs * dim)};
  // This oracle computes dense attention only, without ALiBi. The column sums start at 0 for a
  // problem without query rows, which the pipeline below skips.
  if (rows > 0) ATTNFUZZ_CUDA_CHECK(cudaMemset(out.bias_scale, 0, rows * sizeof(double)));
  ATTNFUZZ_CUDA_CHECK(
      cudaMemset(out.value_abs_sum, 0, std::max<std::int64_t>(pairs * dim, 1) * sizeof(double)));
  const PairSizes sizes(problem);
  if (pairs > 0 && rows > 0) {
    const std::int64_t chunk =
        pairs_per_chunk(sizes.bytes(), pairs, kMaxChunkBytes, "cuBLAS oracle");
    ChunkPipeline pipeline(problem, sizes, chunk, reference.workspace);
    for (std::int64_t first = 0; first < pairs; first += chunk) {
      const std::int64_t count = std::min(chunk, pairs - first);
      pipeline.widen_chunk(inputs, first, count);
      pipeline.data_scales(first, count, out);
      pipeline.scores_for_chunk(count);
      pipeline.softmax_chunk(count);
      pipeline.accumulate_values(count);
      pipeline.normalize_chunk(first, count, out);
    }
  }
  for (DeviceBuffer<double>* scratch :
       {&reference.workspace.query, &reference.workspace.key, &reference.workspace.value,
        &reference.workspace.scores, &reference.workspace.result}) {
    scratch->release_above(kKeptScratchBytes);
  }
  unsigned long long* largest = reference.workspace.largest.reserve(1);
  ATTNFUZZ_CUDA_CHECK(cudaMemset(largest, 0, sizeof *largest));
  max_abs<<<blocks_for(rows * dim, 256, 1024), 256>>>(out.output, rows * dim, largest);
  ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  unsigned long long bits = 0;
  ATTNFUZZ_CUDA_CHECK(cudaMemcpy(&bits, largest, sizeof bits, cudaMemcpyDeviceToHost));
  reference.max_abs_output = std::bit_cast<double>(static_cast<std::uint64_t>(bits));
}

ReferenceAttention cublas_reference_attention(const AttentionProblem& problem,
                                              const AttentionTensors& tensors) {
  const auto q = device_copy_of(tensors.q, static_cast<std::size_t>(q_span(problem)));
  const auto k = device_copy_of(tensors.k, static_cast<std::size_t>(k_span(problem)));
  const auto v = device_copy_of(tensors.v, static_cast<std::size_t>(v_span(problem)));
  thread_local DeviceReference device;
  cublas_reference_on_device(problem, {q.get(), k.get(), v.get()}, device);
  ReferenceAttention reference;
  size_reference(problem, reference);
  download(device.output, reference.output);
  download(device.magnitude, reference.magnitude);
  download(device.inverse_row_sum, reference.inverse_row_sum);
  download(device.score_scale, reference.score_scale);
  download(device.bias_scale, reference.bias_scale);
  download(device.log_sum_exp, reference.log_sum_exp);
  download(device.value_abs_sum, reference.value_abs_sum);
  return reference;
}

std::string cublas_library_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "cuBLAS: its version could not be read";
  }
  return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

std::string cublas_description() {
  try {
    // Without a device the oracle cannot run, whatever the library's version.
    int devices = 0;
    if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess) {
      return std::string("cuBLAS oracle unavailable: ") + cudaGetErrorString(status);
    }
    if (devices == 0) return "cuBLAS oracle unavailable: no CUDA device";
    // Asked of the library, without creating a handle (whose workspace is 64 MiB of the GPU).
    int major = 0, minor = 0, patch = 0;
    ATTNFUZZ_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
    ATTNFUZZ_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
    ATTNFUZZ_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + ", CUBLAS_PEDANTIC_MATH, float64 DGEMM";
  } catch (const std::exception& error) {
    return std::string("cuBLAS oracle unavailable: ") + error.what();
  }
}

}  // namespace attnfuzz
