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
// rest, and writes 1 / sum (0 for a fully masked row). Row r is query row r % seq_len_q.
__global__ void __launch_bounds__(kSoftmaxThreads)
    masked_softmax(double* scores, double* inverse_row_sum, std::int64_t seq_len_q,
                   std::int64_t seq_len_k, bool causal) {
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
  if (threadIdx.x == 0) inverse_row_sum[row] = visible == 0 ? 0.0 : 1.0 / row_sum;
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
      const std::uint16_t* row = tensors.q + batch * problem.q_strides.batch +
                                 i * problem.q_strides.seq + head * problem.q_strides.head;
      double* out = query + (g * problem.seq_len_q + i) * dim;
      for (std::int64_t d = 0; d < dim; ++d) out[d] = widen[row[d]];
    }
  }
  for (std::int64_t j = 0; j < problem.seq_len_k; ++j) {
    const std::uint16_t* k_row = tensors.k + batch * problem.k_strides.batch +
                                 j * problem.k_strides.seq + kv_head * problem.k_strides.head;
    const std::uint16_t* v_row = tensors.v + batch * problem.v_strides.batch +
                                 j * problem.v_strides.seq + kv_head * problem.v_strides.head;
    for (std::int64_t d = 0; d < dim; ++d) {
      key[j * dim + d] = widen[k_row[d]];
      value[j * 2 * dim + d] = widen[v_row[d]];
      value[j * 2 * dim + dim + d] = std::fabs(widen[v_row[d]]);
    }
  }
}

}  // namespace

ReferenceAttention cublas_reference_attention(const AttentionProblem& problem,
                                              const AttentionTensors& tensors) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t seq_q = problem.seq_len_q;
  const std::int64_t seq_k = problem.seq_len_k;
  const std::int64_t group_rows = problem.group_size() * seq_q;  // query rows of one pair
  const std::int64_t pairs = problem.batch * problem.kv_heads;
  ReferenceAttention reference;
  const std::int64_t rows_total = problem.batch * problem.heads * seq_q;
  reference.output.assign(static_cast<std::size_t>(rows_total * dim), 0.0);
  reference.magnitude.assign(static_cast<std::size_t>(rows_total * dim), 0.0);
  reference.inverse_row_sum.assign(static_cast<std::size_t>(rows_total), 0.0);
  reference.score_scale.assign(static_cast<std::size_t>(rows_total), 0.0);
  reference.value_abs_sum.assign(static_cast<std::size_t>(pairs * dim), 0.0);

  // Per pair, in doubles: query, key, value with |value|, scores, result with magnitude.
  const std::int64_t query_size = group_rows * dim, key_size = seq_k * dim,
                     value_size = seq_k * 2 * dim, score_size = group_rows * seq_k,
                     result_size = group_rows * 2 * dim;
  const std::size_t pair_bytes = static_cast<std::size_t>(query_size + key_size + value_size +
                                                          score_size + result_size + group_rows) *
                                 sizeof(double);
  std::size_t free_bytes = 0, total_bytes = 0;
  ATTNFUZZ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t budget = std::min(free_bytes / 2, kMaxChunkBytes);
  if (pair_bytes > budget) {
    throw std::runtime_error("cuBLAS oracle: one (batch, kv head) needs " +
                             std::to_string(pair_bytes >> 20) + " MiB of device memory, " +
                             std::to_string(budget >> 20) + " MiB are available");
  }
  const std::int64_t chunk = std::min<std::int64_t>(pairs, budget / pair_bytes);

  const DeviceArray<double> query(chunk * query_size);
  const DeviceArray<double> key(chunk * key_size);
  const DeviceArray<double> value(chunk * value_size);
  const DeviceArray<double> scores(chunk * score_size);
  const DeviceArray<double> result(chunk * result_size);
  const DeviceArray<double> inverse(chunk * group_rows);
  std::vector<double> host_query(chunk * query_size), host_key(chunk * key_size),
      host_value(chunk * value_size), host_result(chunk * result_size),
      host_inverse(chunk * group_rows);
  cublasHandle_t handle = cublas_handle();
  const double one = 1.0, zero = 0.0, scale = problem.softmax_scale;

  for (std::int64_t first = 0; first < pairs; first += chunk) {
    const std::int64_t count = std::min(chunk, pairs - first);
    for (std::int64_t c = 0; c < count; ++c) {
      const std::int64_t pair = first + c;
      const std::int64_t batch = pair / problem.kv_heads, kv_head = pair % problem.kv_heads;
      double* pair_query = &host_query[c * query_size];
      double* pair_key = &host_key[c * key_size];
      double* pair_value = &host_value[c * value_size];
      widen_pair(problem, tensors, batch, kv_head, pair_query, pair_key, pair_value);
      // The tolerance's data scales, from the same widened values the CPU oracle uses.
      double max_key_norm = 0.0;
      for (std::int64_t j = 0; j < seq_k; ++j) {
        max_key_norm = std::max(max_key_norm, euclidean_norm(pair_key + j * dim, dim));
        for (std::int64_t d = 0; d < dim; ++d) {
          reference.value_abs_sum[pair * dim + d] += pair_value[j * 2 * dim + dim + d];
        }
      }
      for (std::int64_t row = 0; row < group_rows; ++row) {
        reference.score_scale[pair * group_rows + row] =
            scale * euclidean_norm(pair_query + row * dim, dim) * max_key_norm;
      }
    }
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(query.get(), host_query.data(),
                                   count * query_size * sizeof(double), cudaMemcpyHostToDevice));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(key.get(), host_key.data(), count * key_size * sizeof(double),
                                   cudaMemcpyHostToDevice));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(value.get(), host_value.data(),
                                   count * value_size * sizeof(double), cudaMemcpyHostToDevice));

    // cuBLAS is column-major: a row-major [m][n] matrix is its column-major transpose. So the
    // row-major S = Q K^T ([group_rows][seq_k]) is computed as the column-major S^T = K Q^T.
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(seq_k), static_cast<int>(group_rows),
        static_cast<int>(dim), &scale, key.get(), static_cast<int>(dim), key_size, query.get(),
        static_cast<int>(dim), query_size, &zero, scores.get(), static_cast<int>(seq_k), score_size,
        static_cast<int>(count)));
    masked_softmax<<<static_cast<unsigned>(count * group_rows), kSoftmaxThreads>>>(
        scores.get(), inverse.get(), seq_q, seq_k, problem.causal);
    ATTNFUZZ_CUDA_CHECK(cudaGetLastError());
    // Row-major [O | A] = P [V | |V|] ([group_rows][2 dim]) as column-major [V | |V|]^T P^T.
    ATTNFUZZ_CUBLAS_CHECK(cublasDgemmStridedBatched(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(2 * dim), static_cast<int>(group_rows),
        static_cast<int>(seq_k), &one, value.get(), static_cast<int>(2 * dim), value_size,
        scores.get(), static_cast<int>(seq_k), score_size, &zero, result.get(),
        static_cast<int>(2 * dim), result_size, static_cast<int>(count)));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_result.data(), result.get(),
                                   count * result_size * sizeof(double), cudaMemcpyDeviceToHost));
    ATTNFUZZ_CUDA_CHECK(cudaMemcpy(host_inverse.data(), inverse.get(),
                                   count * group_rows * sizeof(double), cudaMemcpyDeviceToHost));

    // A pair's rows are contiguous in the compact [batch][heads][seq_len_q] order: its query
    // heads are kv_head * group .. kv_head * group + group - 1 of its batch.
    for (std::int64_t row = 0; row < count * group_rows; ++row) {
      const std::int64_t row_index = first * group_rows + row;
      const double inverse_sum = host_inverse[row];
      reference.inverse_row_sum[row_index] = inverse_sum;
      const double* row_result = &host_result[row * 2 * dim];
      for (std::int64_t d = 0; d < dim; ++d) {
        reference.output[row_index * dim + d] = row_result[d] * inverse_sum;
        reference.magnitude[row_index * dim + d] = row_result[dim + d] * inverse_sum;
      }
    }
  }
  return reference;
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
