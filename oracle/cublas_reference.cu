// SPDX-License-Identifier: BSD-3-Clause
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device_array.h"
#include "oracle/cublas_reference.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

constexpr int kSoftmaxThreads = 128;
// Device memory one chunk may take: half of what is free, and never more than this, so that the
// oracle leaves room for the kernel's buffers of the next case.
constexpr std::size_t kMaxChunkBytes = std::size_t{8} << 30;

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed with " + cublasGetStatusName(status) +
                             " (" + cublasGetStatusString(status) + ")");
  }
}
#define ATTNFUZZ_CUBLAS_CHECK(call) check_cublas((call), #call)

// One handle per process, in pedantic math mode (every product in true FP64), destroyed at exit
// so that its workspace is given back (a leak checker such as compute-sanitizer --leak-check full
// would otherwise report it). It is created after the CUDA runtime has started, so it is destroyed
// before the runtime's own teardown.
class CublasHandle {
 public:
  CublasHandle() {
    ATTNFUZZ_CUBLAS_CHECK(cublasCreate(&handle_));
    ATTNFUZZ_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
  }
  ~CublasHandle() { cublasDestroy(handle_); }  // at exit nothing is left to report a failure to
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

cublasHandle_t cublas_handle() {
  static const CublasHandle handle;
  return handle.get();
}

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

double euclidean_norm(const double* values, std::int64_t count) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < count; ++i) sum += values[i] * values[i];
  return std::sqrt(sum);
}

// The widened inputs of one (batch, kv head) pair, compact and row-major:
//   query [group * seq_len_q][head_dim]   (the group's query heads one after another)
//   key   [seq_len_k][head_dim]
//   value [seq_len_k][2 * head_dim]       (V beside |V|: one DGEMM gives O and its error scale)
void widen_pair(const AttentionProblem& problem, const AttentionTensors& tensors,
                std::int64_t batch, std::int64_t kv_head, double* query, double* key,
                double* value) {
  const std::span<const float> widen = widening_table(problem.dtype);
  const std::int64_t dim = problem.head_dim;
  for (std::int64_t g = 0; g < problem.group_size(); ++g) {
    const std::int64_t head = kv_head * problem.group_size() + g;
    for (std::int64_t i = 0; i < problem.seq_len_q; ++i) {
      widen_row(query_row(problem, tensors, batch, i, head), dim, widen,
                query + (g * problem.seq_len_q + i) * dim);
    }
  }
  for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
    widen_row(key_row(problem, tensors, batch, j, kv_head), dim, widen, key + j * dim);
    const std::uint16_t* v_row = value_row(problem, tensors, batch, j, kv_head);
    for (std::int64_t d = 0; d < dim; ++d) {
      value[j * 2 * dim + d] = widen[v_row[d]];
      value[j * 2 * dim + dim + d] = std::fabs(widen[v_row[d]]);
    }
  }
}

// The tolerance's data scales of one pair, from the same widened values the CPU oracle uses:
// the column sums of |V| and scale * |Q_i| * max_j |K_j| for each of the pair's query rows.
void store_data_scales(const AttentionProblem& problem, std::int64_t pair, const double* query,
                       const double* key, const double* value, ReferenceAttention& reference) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t group_rows = problem.group_size() * problem.seq_len_q;
  double max_key_norm = 0.0;
  for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
    max_key_norm = std::max(max_key_norm, euclidean_norm(key + j * dim, dim));
    for (std::int64_t d = 0; d < dim; ++d) {
      reference.value_abs_sum[pair * dim + d] += value[j * 2 * dim + dim + d];
    }
  }
  for (std::int64_t row = 0; row < group_rows; ++row) {
    reference.score_scale[pair * group_rows + row] =
        problem.softmax_scale * euclidean_norm(query + row * dim, dim) * max_key_norm;
  }
}

// The result at its size (size_reference, shared with the CPU oracle), the arrays the pipeline
// does not overwrite set to 0: the column sums of |V|, which it adds to, and bias_scale, which
// stays 0 (this oracle computes dense attention only, without ALiBi).
ReferenceAttention sized_reference(const AttentionProblem& problem) {
  ReferenceAttention reference;
  size_reference(problem, reference);
  std::fill(reference.value_abs_sum.begin(), reference.value_abs_sum.end(), 0.0);
  std::fill(reference.bias_scale.begin(), reference.bias_scale.end(), 0.0);
  return reference;
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
    return static_cast<std::size_t>(query + key + value + scores + result + 2 * group_rows) *
           sizeof(double);
  }
};

// Pairs per chunk: as many as fit the device memory budget. Throws when not even one fits.
std::int64_t pairs_per_chunk(const PairSizes& sizes, std::int64_t pairs) {
  const std::size_t pair_bytes = sizes.bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  ATTNFUZZ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t budget = std::min(free_bytes / 2, kMaxChunkBytes);
  if (pair_bytes > budget) {
    throw std::runtime_error("cuBLAS oracle: one (batch, kv head) needs " +
                             std::to_string(pair_bytes >> 20) + " MiB of device memory, " +
                             std::to_string(budget >> 20) + " MiB are available");
  }
  return std::min<std::int64_t>(pairs, budget / pair_bytes);
}

// The host and device arrays of one chunk of pairs, allocated once, and the stages that take a
// chunk through them in order: widen, upload, scores, softmax, values, download, normalize.
class ChunkPipeline {
 public:
  ChunkPipeline(const AttentionProblem& problem, const PairSizes& sizes, std::int64_t chunk)
      : problem_(problem),
        sizes_(sizes),
        query_(chunk * sizes.query),
        key_(chunk * sizes.key),
        value_(chunk * sizes.value),
        scores_(chunk * sizes.scores),
        result_(chunk * sizes.result),
        inverse_(chunk * sizes.group_rows),
        log_sum_exp_(chunk * sizes.group_rows),
        host_query_(chunk * sizes.query),
        host_key_(chunk * sizes.key),
        host_value_(chunk * sizes.value),
        host_result_(chunk * sizes.result),
        host_inverse_(chunk * sizes.group_rows),
        host_log_sum_exp_(chunk * sizes.group_rows),
        handle_(cublas_handle()) {}

  // Pairs first .. first + count - 1 widened on the host, with their data scales.
  void widen_chunk(const AttentionTensors& tensors, std::int64_t first, std::int64_t count,
                   ReferenceAttention& reference) {
    for (std::int64_t c = 0; c < count; ++c) {
      const std::int64_t pair = first + c;
      const std::int64_t batch = pair / problem_.kv_heads, kv_head = pair % problem_.kv_heads;
      double* pair_query = &host_query_[c * sizes_.query];
      double* pair_key = &host_key_[c * sizes_.key];
      double* pair_value = &host_value_[c * sizes_.value];
      widen_pair(problem_, tensors, batch, kv_head, pair_query, pair_key, pair_value);
      store_data_scales(problem_, pair, pair_query, pair_key, pair_value, reference);
    }
  }

  void upload_chunk(std::int64_t count) {
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(query_.get(), host_query_.data(),
                                   count * sizes_.query * sizeof(double), cudaMemcpyHostToDevice));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(key_.get(), host_key_.data(),
                                   count * sizes_.key * sizeof(double), cudaMemcpyHostToDevice));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(value_.get(), host_value_.data(),
                                   count * sizes_.value * sizeof(double), cudaMemcpyHostToDevice));
  }

  // cuBLAS is column-major: a row-major [m][n] matrix is its column-major transpose. So the
  // row-major S = Q K^T ([group_rows][seq_k]) is computed as the column-major S^T = K Q^T.
  void scores_for_chunk(std::int64_t count) {
    const double zero = 0.0, scale = problem_.softmax_scale;
    const std::int64_t dim = problem_.head_dim;
    const std::int64_t seq_k = problem_.seq_len_k;
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(seq_k),
        static_cast<int>(sizes_.group_rows), static_cast<int>(dim), &scale, key_.get(),
        static_cast<int>(dim), sizes_.key, query_.get(), static_cast<int>(dim), sizes_.query, &zero,
        scores_.get(), static_cast<int>(seq_k), sizes_.scores, static_cast<int>(count)));
  }

  void softmax_chunk(std::int64_t count) {
    masked_softmax<<<static_cast<unsigned>(count * sizes_.group_rows), kSoftmaxThreads>>>(
        scores_.get(), inverse_.get(), log_sum_exp_.get(), problem_.seq_len_q, problem_.seq_len_k,
        problem_.causal);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
  }

  // Row-major [O | A] = P [V | |V|] ([group_rows][2 dim]) as column-major [V | |V|]^T P^T.
  void accumulate_values(std::int64_t count) {
    const double one = 1.0, zero = 0.0;
    const std::int64_t dim = problem_.head_dim;
    const std::int64_t seq_k = problem_.seq_len_k;
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(2 * dim),
        static_cast<int>(sizes_.group_rows), static_cast<int>(seq_k), &one, value_.get(),
        static_cast<int>(2 * dim), sizes_.value, scores_.get(), static_cast<int>(seq_k),
        sizes_.scores, &zero, result_.get(), static_cast<int>(2 * dim), sizes_.result,
        static_cast<int>(count)));
  }

  void download_chunk(std::int64_t count) {
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_result_.data(), result_.get(),
                                   count * sizes_.result * sizeof(double), cudaMemcpyDeviceToHost));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_inverse_.data(), inverse_.get(),
                                   count * sizes_.group_rows * sizeof(double),
                                   cudaMemcpyDeviceToHost));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_log_sum_exp_.data(), log_sum_exp_.get(),
                                   count * sizes_.group_rows * sizeof(double),
                                   cudaMemcpyDeviceToHost));
  }

  // O and A divided by the row sums. A pair's rows are contiguous in the compact
  // [batch][heads][seq_len_q] order: its query heads are kv_head * group .. kv_head * group +
  // group - 1 of its batch.
  void normalize_rows(std::int64_t first, std::int64_t count, ReferenceAttention& reference) {
    const std::int64_t dim = problem_.head_dim;
    for (std::int64_t row = 0; row < count * sizes_.group_rows; ++row) {
      const std::int64_t row_index = first * sizes_.group_rows + row;
      const double inverse_sum = host_inverse_[row];
      reference.inverse_row_sum[row_index] = inverse_sum;
      reference.log_sum_exp[row_index] = host_log_sum_exp_[row];
      const double* row_result = &host_result_[row * 2 * dim];
      for (std::int64_t d = 0; d < dim; ++d) {
        reference.output[row_index * dim + d] = row_result[d] * inverse_sum;
        reference.magnitude[row_index * dim + d] = row_result[dim + d] * inverse_sum;
      }
    }
  }

 private:
  const AttentionProblem& problem_;
  const PairSizes sizes_;
  const DeviceArray<double> query_, key_, value_, scores_, result_, inverse_, log_sum_exp_;
  std::vector<double> host_query_, host_key_, host_value_, host_result_, host_inverse_,
      host_log_sum_exp_;
  const cublasHandle_t handle_;
};

}  // namespace

ReferenceAttention cublas_reference_attention(const AttentionProblem& problem,
                                              const AttentionTensors& tensors) {
  const std::int64_t pairs = problem.batch * problem.kv_heads;
  ReferenceAttention reference = sized_reference(problem);
  const PairSizes sizes(problem);
  const std::int64_t chunk = pairs_per_chunk(sizes, pairs);
  ChunkPipeline pipeline(problem, sizes, chunk);
  for (std::int64_t first = 0; first < pairs; first += chunk) {
    const std::int64_t count = std::min(chunk, pairs - first);
    pipeline.widen_chunk(tensors, first, count, reference);
    pipeline.upload_chunk(count);
    pipeline.scores_for_chunk(count);
    pipeline.softmax_chunk(count);
    pipeline.accumulate_values(count);
    pipeline.download_chunk(count);
    pipeline.normalize_rows(first, count, reference);
  }
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
