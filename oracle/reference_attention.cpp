// The float64 oracle. Work is split into (batch, head, block of query rows) items spread over the
// machine's threads; each item widens its inputs exactly to double and runs two DGEMMs:
//   S = scale * Q K^T                    (rows x seq_len_k)
//   [O | A] = P [V | |V|]                (one DGEMM gives the output and its error scale)
// with the masked, max-subtracted softmax in between. OpenBLAS runs single-threaded inside each
// item, since the items already keep every core busy.
#include "oracle/reference_attention.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "core/parallel_for.h"
#include "oracle/softmax_row.h"

namespace attnfuzz {
namespace {

// Query rows per work item: enough for DGEMM to run near peak, small enough that the score block
// (rows x seq_len_k doubles) stays modest and that short sequences still give every core work.
constexpr std::int64_t kRowsPerItem = 128;

struct Workspace {
  // K and V of the (call, batch, kv head) last widened: consecutive items usually share it.
  std::uint64_t cached_call = 0;
  std::int64_t cached_batch = -1, cached_kv_head = -1;
  double max_key_norm = 0.0;
  std::vector<double> query;          // [rows][head_dim]
  std::vector<double> key;            // [seq_len_k][head_dim]
  std::vector<double> value_and_abs;  // [seq_len_k][2 * head_dim]: V beside |V|
  std::vector<double> scores;         // [rows][seq_len_k], then probabilities
  std::vector<double> result;         // [rows][2 * head_dim]: O beside A
};

void widen_rows(const std::uint16_t* base, std::int64_t row_stride, std::int64_t rows,
                std::int64_t dim, Dtype dtype, double* out, std::int64_t out_stride) {
  const std::span<const float> widen = widening_table(dtype);
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::uint16_t* in = base + row * row_stride;
    for (std::int64_t d = 0; d < dim; ++d) out[row * out_stride + d] = widen[in[d]];
  }
}

// Widened fp16/bf16 values cannot overflow a sum of squares in double: no scaling needed.
double euclidean_norm(const double* values, std::int64_t count) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < count; ++i) sum += values[i] * values[i];
  return std::sqrt(sum);
}

// Query rows per item: whole heads when there are enough of them to keep every thread busy,
// otherwise blocks of kRowsPerItem rows so that a few long heads still spread over all cores.
std::int64_t rows_per_item(const AttentionProblem& problem, int threads) {
  const std::int64_t heads = problem.batch * problem.heads;
  if (heads >= 4 * static_cast<std::int64_t>(threads) && problem.seq_len_q <= 4 * kRowsPerItem) {
    return problem.seq_len_q;
  }
  return kRowsPerItem;
}

}  // namespace

ReferenceAttention reference_attention(const AttentionProblem& problem,
                                       const AttentionTensors& tensors, int threads) {
  static const bool blas_single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)blas_single_threaded;

  static std::atomic<std::uint64_t> calls{0};
  const std::uint64_t call = ++calls;  // identifies this call's inputs in the per-thread caches
  const std::int64_t dim = problem.head_dim;
  const std::int64_t seq_k = problem.seq_len_k;
  const std::int64_t rows_total = problem.batch * problem.heads * problem.seq_len_q;
  ReferenceAttention reference;
  reference.output.assign(static_cast<std::size_t>(rows_total * dim), 0.0);
  reference.magnitude.assign(static_cast<std::size_t>(rows_total * dim), 0.0);
  reference.inverse_row_sum.assign(static_cast<std::size_t>(rows_total), 0.0);
  reference.score_scale.assign(static_cast<std::size_t>(rows_total), 0.0);
  reference.value_abs_sum.assign(static_cast<std::size_t>(problem.batch * problem.kv_heads * dim),
                                 0.0);

  // Column sums of |V| per (batch, kv head): cheap, done once.
  const std::span<const float> widen = widening_table(problem.dtype);
  for (std::int64_t b = 0; b < problem.batch; ++b) {
    for (std::int64_t kv = 0; kv < problem.kv_heads; ++kv) {
      double* sums = &reference.value_abs_sum[(b * problem.kv_heads + kv) * dim];
      for (std::int64_t j = 0; j < seq_k; ++j) {
        const std::uint16_t* v_row = tensors.v + b * problem.v_strides.batch +
                                     j * problem.v_strides.seq + kv * problem.v_strides.head;
        for (std::int64_t d = 0; d < dim; ++d) sums[d] += std::fabs(widen[v_row[d]]);
      }
    }
  }

  const std::int64_t block_rows =
      rows_per_item(problem, threads > 0 ? threads : default_thread_count());
  const std::int64_t row_blocks = (problem.seq_len_q + block_rows - 1) / block_rows;
  parallel_for(
      problem.batch * problem.heads * row_blocks,
      [&](std::int64_t item) {
        thread_local Workspace work;
        const std::int64_t block = item % row_blocks;
        const std::int64_t head = (item / row_blocks) % problem.heads;
        const std::int64_t batch = item / (row_blocks * problem.heads);
        const std::int64_t kv_head = head / problem.group_size();
        const std::int64_t first_row = block * block_rows;
        const std::int64_t rows = std::min(block_rows, problem.seq_len_q - first_row);

        work.query.resize(static_cast<std::size_t>(rows * dim));
        work.scores.resize(static_cast<std::size_t>(rows * seq_k));
        work.result.resize(static_cast<std::size_t>(rows * 2 * dim));
        widen_rows(tensors.q + batch * problem.q_strides.batch + first_row * problem.q_strides.seq +
                       head * problem.q_strides.head,
                   problem.q_strides.seq, rows, dim, problem.dtype, work.query.data(), dim);
        if (work.cached_call != call || work.cached_batch != batch ||
            work.cached_kv_head != kv_head) {
          work.key.resize(static_cast<std::size_t>(seq_k * dim));
          work.value_and_abs.resize(static_cast<std::size_t>(seq_k * 2 * dim));
          widen_rows(tensors.k + batch * problem.k_strides.batch + kv_head * problem.k_strides.head,
                     problem.k_strides.seq, seq_k, dim, problem.dtype, work.key.data(), dim);
          widen_rows(tensors.v + batch * problem.v_strides.batch + kv_head * problem.v_strides.head,
                     problem.v_strides.seq, seq_k, dim, problem.dtype, work.value_and_abs.data(),
                     2 * dim);
          work.max_key_norm = 0.0;
          for (std::int64_t j = 0; j < seq_k; ++j) {
            double* value_row = &work.value_and_abs[j * 2 * dim];
            for (std::int64_t d = 0; d < dim; ++d) value_row[dim + d] = std::fabs(value_row[d]);
            work.max_key_norm =
                std::max(work.max_key_norm, euclidean_norm(&work.key[j * dim], dim));
          }
          work.cached_batch = batch;
          work.cached_kv_head = kv_head;
          work.cached_call = call;
        }
        const double max_key_norm = work.max_key_norm;

        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                    static_cast<int>(seq_k), static_cast<int>(dim), problem.softmax_scale,
                    work.query.data(), static_cast<int>(dim), work.key.data(),
                    static_cast<int>(dim), 0.0, work.scores.data(), static_cast<int>(seq_k));

        const std::int64_t row_index_base = (batch * problem.heads + head) * problem.seq_len_q;
        for (std::int64_t row = 0; row < rows; ++row) {
          const std::int64_t query_row = first_row + row;
          const std::int64_t visible = problem.last_visible_key(query_row) + 1;
          double* scores = &work.scores[row * seq_k];
          const std::int64_t row_index = row_index_base + query_row;
          reference.score_scale[row_index] =
              problem.softmax_scale * euclidean_norm(&work.query[row * dim], dim) * max_key_norm;
          if (visible == 0) {  // fully masked row: output 0, nothing to bound
            std::fill_n(scores, seq_k, 0.0);
            continue;
          }
          const double row_max = row_maximum(scores, visible);
          const double row_sum = exponentiate_and_sum(scores, visible, row_max);
          std::fill(scores + visible, scores + seq_k, 0.0);
          reference.inverse_row_sum[row_index] = 1.0 / row_sum;  // applied after P [V | |V|]
        }

        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                    static_cast<int>(2 * dim), static_cast<int>(seq_k), 1.0, work.scores.data(),
                    static_cast<int>(seq_k), work.value_and_abs.data(), static_cast<int>(2 * dim),
                    0.0, work.result.data(), static_cast<int>(2 * dim));
        for (std::int64_t row = 0; row < rows; ++row) {
          const std::int64_t row_index = row_index_base + first_row + row;
          const double inverse = reference.inverse_row_sum[row_index];
          const double* result = &work.result[row * 2 * dim];
          for (std::int64_t d = 0; d < dim; ++d) {
            reference.output[row_index * dim + d] = result[d] * inverse;
            reference.magnitude[row_index * dim + d] = result[dim + d] * inverse;
          }
        }
      },
      threads);
  return reference;
}

}  // namespace attnfuzz

namespace attnfuzz {

std::string blas_description() {
  return openblas_get_config();
}

}  // namespace attnfuzz
