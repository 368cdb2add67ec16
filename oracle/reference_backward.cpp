// SPDX-License-Identifier: BSD-3-Clause
// The float64 backward oracle. One work item per (batch, kv head), or per part of one when there
// are too few of them to keep every thread busy (MQA, one long head): it widens that sequence's K
// and V, then walks its query heads of the group in blocks of query rows, as the forward oracle
// does:
//   S  = scale Q K^T                DGEMM over the keys the block's last row can see
//   P  = softmax(t(S))              soft-capped, biased, masked, normalised, in double
//   O  = P V; D = rowsum(dO * O)    DGEMM, then one dot product a row
//   dP = dO V^T                     DGEMM
//   dS = P (dP - D) t'(S)           and the weights w of the magnitudes
//   dV += P^T dO, dK += scale dS^T Q, dQ = scale dS K     DGEMMs; magnitudes alike on |.|
// A whole kv head's item owns its dK and dV and its heads' dQ rows, so every element of the
// result is written by exactly one item and buffers may be reused; a part owns its blocks' dQ
// rows and sums its share of dK and dV into a slot of its own, the slots added up in part order
// afterwards (the same bits whatever the threads' timing).
#include "oracle/reference_backward.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "oracle/row_norm.h"
#include "oracle/score_row.h"
#include "oracle/single_threaded_blas.h"
#include "oracle/softmax_row.h"
#include "oracle/tensor_rows.h"

namespace attnfuzz {
namespace {

// Query rows per block: DGEMMs near peak, the [rows][keys] blocks modest.
constexpr std::int64_t kRowsPerBlock = 128;

struct Workspace {
  LargeBuffer<double> key, value, key_abs;                 // [seq_k][dim]
  LargeBuffer<double> dk, dv, dk_magnitude, dv_magnitude;  // [seq_k][dim], the item's sums
  LargeBuffer<double> query, query_abs;                    // [rows][dim]
  LargeBuffer<double> grad_output, grad_output_abs;        // [rows][dim]
  LargeBuffer<double> output;                              // [rows][dim]
  LargeBuffer<double> probabilities;                       // [rows][keys]
  LargeBuffer<double> cap_slope;                           // [rows][keys], t'(s); soft-capped
  LargeBuffer<double> grad_probabilities;                  // [rows][keys], dP, then dS
  LargeBuffer<double> weights;                             // [rows][keys], w
  LargeBuffer<double> dq, dq_magnitude;                    // [rows][dim]
  LargeBuffer<double> query_abs_sum, grad_output_abs_sum;  // [dim], the item's sums
};

void absolute_values(const double* in, std::int64_t count, double* out) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = std::fabs(in[i]);
}

// C (m x n) = alpha A B (+ C when accumulating), row-major; A is m x k (k x m when transposed),
// B is k x n (n x k when transposed).
void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
          double alpha, const double* a, const double* b, bool accumulate, double* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill_n(c, m * n, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(transpose_a ? m : k), b,
              static_cast<int>(transpose_b ? k : n), accumulate ? 1.0 : 0.0, c,
              static_cast<int>(n));
}

// Where one work item lies, and one block of its query rows.
struct KeyValueHead {
  std::int64_t batch, kv_head, seq_q, seq_k;
};
struct RowBlock {
  std::int64_t head, first_row, rows;
  std::int64_t keys;  // keys before the last row's visible end; 0: none seen
};

void widen_keys_and_values(const AttentionProblem& problem, const AttentionTensors& tensors,
                           const KeyValueHead& item, Workspace& work) {
  const std::int64_t dim = problem.head_dim;
  const auto elements = static_cast<std::size_t>(item.seq_k * dim);
  for (LargeBuffer<double>* buffer : {&work.key, &work.value, &work.key_abs}) {
    resize_for_overwrite(*buffer, elements);
  }
  for (LargeBuffer<double>* buffer : {&work.dk, &work.dv, &work.dk_magnitude, &work.dv_magnitude}) {
    buffer->assign(elements, 0.0);
  }
  for (std::int64_t j = 0; j < item.seq_k; ++j) {
    widen_to_double(key_row(problem, tensors, item.batch, j, item.kv_head), dim, problem.dtype,
                    work.key.data() + j * dim);
    widen_to_double(value_row(problem, tensors, item.batch, j, item.kv_head), dim, problem.dtype,
                    work.value.data() + j * dim);
  }
  absolute_values(work.key.data(), item.seq_k * dim, work.key_abs.data());
  work.query_abs_sum.assign(static_cast<std::size_t>(dim), 0.0);
  work.grad_output_abs_sum.assign(static_cast<std::size_t>(dim), 0.0);
}

double largest_value_norm(std::int64_t seq_k, std::int64_t dim, const Workspace& work) {
  double largest = 0.0;
  for (std::int64_t j = 0; j < seq_k; ++j) {
    largest = std::max(largest, euclidean_norm(&work.value[j * dim], dim));
  }
  return largest;
}

void widen_query_rows(const AttentionProblem& problem, const AttentionTensors& tensors,
                      const std::uint16_t* grad_output, const KeyValueHead& item,
                      const RowBlock& block, Workspace& work) {
  const std::int64_t dim = problem.head_dim;
  const auto elements = static_cast<std::size_t>(block.rows * dim);
  for (LargeBuffer<double>* buffer :
       {&work.query, &work.query_abs, &work.grad_output, &work.grad_output_abs}) {
    resize_for_overwrite(*buffer, elements);
  }
  for (std::int64_t row = 0; row < block.rows; ++row) {
    const std::int64_t i = block.first_row + row;
    widen_to_double(query_row(problem, tensors, item.batch, i, block.head), dim, problem.dtype,
                    work.query.data() + row * dim);
    widen_to_double(output_row(problem, grad_output, item.batch, i, block.head), dim, problem.dtype,
                    work.grad_output.data() + row * dim);
  }
  absolute_values(work.query.data(), block.rows * dim, work.query_abs.data());
  absolute_values(work.grad_output.data(), block.rows * dim, work.grad_output_abs.data());
  for (std::int64_t row = 0; row < block.rows; ++row) {
    for (std::int64_t d = 0; d < dim; ++d) {
      work.query_abs_sum[d] += work.query_abs[row * dim + d];
      work.grad_output_abs_sum[d] += work.grad_output_abs[row * dim + d];
    }
  }
}

// P = softmax(t(scale Q K^T)) over each row's visible keys (0 elsewhere), and t'(s) where
// soft-capped.
void probabilities_for_block(const AttentionProblem& problem, const KeyValueHead& item,
                             const RowBlock& block, Workspace& work) {
  const std::int64_t keys = block.keys;
  const auto elements = static_cast<std::size_t>(block.rows * keys);
  resize_for_overwrite(work.probabilities, elements);
  gemm(false, true, block.rows, keys, problem.head_dim, problem.softmax_scale, work.query.data(),
       work.key.data(), false, work.probabilities.data());
  const bool capped = problem.softcap > 0.0;
  if (capped) work.cap_slope.assign(elements, 0.0);
  for (std::int64_t row = 0; row < block.rows; ++row) {
    const std::int64_t i = block.first_row + row;
    const KeyRange visible = visible_keys_within(problem, item.batch, i, keys);
    double* p = &work.probabilities[row * keys];
    const std::int64_t count = visible.end - visible.first;
    if (count > 0) {
      double* seen = p + visible.first;
      logits_from_scores(problem, item.batch, block.head, i, visible.first, count, seen,
                         capped ? &work.cap_slope[row * keys + visible.first] : nullptr);
      const double row_max = row_maximum(seen, count);
      const double inverse = 1.0 / exponentiate_and_sum(seen, count, row_max);
      for (std::int64_t j = 0; j < count; ++j) seen[j] *= inverse;
    }
    std::fill(p, p + visible.first, 0.0);
    std::fill(p + visible.end, p + keys, 0.0);
  }
}

// O = P V, D_i = dO_i . O_i; dP = dO V^T, turned in place into dS = P (dP - D) t'; the weights
// w = P (|dP| + |D| + gradient scale). Stores D and the gradient scale of the block's rows.
void score_gradients_for_block(const AttentionProblem& problem, const KeyValueHead& item,
                               const RowBlock& block, double value_norm, Workspace& work,
                               ReferenceGradients& gradients) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t keys = block.keys;
  resize_for_overwrite(work.output, static_cast<std::size_t>(block.rows * dim));
  gemm(false, false, block.rows, dim, keys, 1.0, work.probabilities.data(), work.value.data(),
       false, work.output.data());
  resize_for_overwrite(work.grad_probabilities, static_cast<std::size_t>(block.rows * keys));
  gemm(false, true, block.rows, keys, dim, 1.0, work.grad_output.data(), work.value.data(), false,
       work.grad_probabilities.data());
  resize_for_overwrite(work.weights, static_cast<std::size_t>(block.rows * keys));
  // eta / u: O handed to a kernel is rounded to the dtype, off by u |O_id| + eta; the eta part's
  // share of D's error, eta sum_d |dO_id|, is u times this share of sum_d |dO_id|.
  const DtypeTraits& traits = traits_of(problem.dtype);
  const double subnormal_share = traits.min_subnormal / 2.0 / traits.unit_roundoff();
  const std::int64_t row_base =
      ((item.batch * problem.heads + block.head) * problem.seq_len_q) + block.first_row;
  for (std::int64_t row = 0; row < block.rows; ++row) {
    const double* grad_output = &work.grad_output[row * dim];
    double output_dot = 0.0, grad_output_abs_sum = 0.0;
    for (std::int64_t d = 0; d < dim; ++d) {
      output_dot += grad_output[d] * work.output[row * dim + d];
      grad_output_abs_sum += work.grad_output_abs[row * dim + d];
    }
    const double gradient_scale =
        euclidean_norm(grad_output, dim) * value_norm + subnormal_share * grad_output_abs_sum;
    gradients.output_dot[row_base + row] = output_dot;
    gradients.gradient_scale[row_base + row] = gradient_scale;
    const double* p = &work.probabilities[row * keys];
    double* ds = &work.grad_probabilities[row * keys];
    double* w = &work.weights[row * keys];
    double largest_weight = 0.0;
    for (std::int64_t j = 0; j < keys; ++j) {
      w[j] = p[j] * (std::fabs(ds[j]) + std::fabs(output_dot) + gradient_scale);
      ds[j] = p[j] * (ds[j] - output_dot);
      largest_weight = std::max(largest_weight, w[j]);
    }
    gradients.largest_weight[row_base + row] = largest_weight;
    if (problem.softcap > 0.0) {
      const double* slope = &work.cap_slope[row * keys];
      for (std::int64_t j = 0; j < keys; ++j) ds[j] *= slope[j];
    }
  }
}

// dV += P^T dO, dK += scale dS^T Q and their magnitudes; dQ = scale dS K and its magnitude into
// the result.
void accumulate_gradients_for_block(const AttentionProblem& problem, const KeyValueHead& item,
                                    const RowBlock& block, Workspace& work,
                                    ReferenceGradients& gradients) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t keys = block.keys;
  const double scale = problem.softmax_scale;
  gemm(true, false, keys, dim, block.rows, 1.0, work.probabilities.data(), work.grad_output.data(),
       true, work.dv.data());
  gemm(true, false, keys, dim, block.rows, 1.0, work.probabilities.data(),
       work.grad_output_abs.data(), true, work.dv_magnitude.data());
  gemm(true, false, keys, dim, block.rows, scale, work.grad_probabilities.data(), work.query.data(),
       true, work.dk.data());
  gemm(true, false, keys, dim, block.rows, scale, work.weights.data(), work.query_abs.data(), true,
       work.dk_magnitude.data());
  const std::int64_t row_base =
      ((item.batch * problem.heads + block.head) * problem.seq_len_q) + block.first_row;
  gemm(false, false, block.rows, dim, keys, scale, work.grad_probabilities.data(), work.key.data(),
       false, gradients.dq.data() + row_base * dim);
  gemm(false, false, block.rows, dim, keys, scale, work.weights.data(), work.key_abs.data(), false,
       gradients.dq_magnitude.data() + row_base * dim);
}

// Rows [from, seq_len_q) of a head: past its sequence's end.
void zero_query_rows(const AttentionProblem& problem, const KeyValueHead& item, std::int64_t head,
                     std::int64_t from, ReferenceGradients& gradients) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t base = (item.batch * problem.heads + head) * problem.seq_len_q + from;
  const std::int64_t rows = problem.seq_len_q - from;
  std::fill_n(gradients.dq.begin() + base * dim, rows * dim, 0.0);
  std::fill_n(gradients.dq_magnitude.begin() + base * dim, rows * dim, 0.0);
  std::fill_n(gradients.output_dot.begin() + base, rows, 0.0);
  std::fill_n(gradients.gradient_scale.begin() + base, rows, 0.0);
  std::fill_n(gradients.largest_weight.begin() + base, rows, 0.0);
}

// Where an item's sums over K's rows go: the result's own arrays (the item is a whole kv head),
// or its part's slot, added up with the other parts' afterwards ([seq_len_k][dim] each, then
// [dim] each).
struct KeySums {
  double *dk, *dv, *dk_magnitude, *dv_magnitude;
  double *query_abs_sum, *grad_output_abs_sum;
};

KeySums sums_in_result(const AttentionProblem& problem, const KeyValueHead& item,
                       ReferenceGradients& gradients) {
  const std::int64_t group = item.batch * problem.kv_heads + item.kv_head;
  const std::int64_t rows = group * problem.seq_len_k * problem.head_dim;
  const std::int64_t sums = group * problem.head_dim;
  return {gradients.dk.data() + rows,
          gradients.dv.data() + rows,
          gradients.dk_magnitude.data() + rows,
          gradients.dv_magnitude.data() + rows,
          gradients.query_abs_sum.data() + sums,
          gradients.grad_output_abs_sum.data() + sums};
}

// A part's slot: four [seq_len_k][dim] arrays, then two [dim] ones.
std::int64_t part_slot_elements(const AttentionProblem& problem) {
  return (4 * problem.seq_len_k + 2) * problem.head_dim;
}
KeySums sums_in_slot(const AttentionProblem& problem, double* slot) {
  const std::int64_t rows = problem.seq_len_k * problem.head_dim;
  return {slot,
          slot + rows,
          slot + 2 * rows,
          slot + 3 * rows,
          slot + 4 * rows,
          slot + 4 * rows + problem.head_dim};
}

void store_key_sums(const AttentionProblem& problem, const KeyValueHead& item,
                    const Workspace& work, const KeySums& to) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t live = item.seq_k * dim;
  const std::int64_t all = problem.seq_len_k * dim;
  const auto store = [&](const LargeBuffer<double>& from, double* out) {
    std::copy_n(from.begin(), live, out);
    std::fill_n(out + live, all - live, 0.0);
  };
  store(work.dk, to.dk);
  store(work.dv, to.dv);
  store(work.dk_magnitude, to.dk_magnitude);
  store(work.dv_magnitude, to.dv_magnitude);
  std::copy_n(work.query_abs_sum.begin(), dim, to.query_abs_sum);
  std::copy_n(work.grad_output_abs_sum.begin(), dim, to.grad_output_abs_sum);
}

void store_key_abs_sum(const AttentionProblem& problem, const KeyValueHead& item,
                       const Workspace& work, ReferenceGradients& gradients) {
  const std::int64_t dim = problem.head_dim;
  const std::int64_t sums = (item.batch * problem.kv_heads + item.kv_head) * dim;
  for (std::int64_t d = 0; d < dim; ++d) {
    double key_sum = 0.0;
    for (std::int64_t j = 0; j < item.seq_k; ++j) key_sum += work.key_abs[j * dim + d];
    gradients.key_abs_sum[sums + d] = key_sum;
  }
}

// Part `part` of `parts` of a kv head's work: its share of the group's (query head, block of
// rows) pairs, head by head. Part 0 also zeroes the rows past the sequence's end.
void backward_for_part(const AttentionProblem& problem, const AttentionTensors& tensors,
                       const std::uint16_t* grad_output, const KeyValueHead& item,
                       std::int64_t part, std::int64_t parts, Workspace& work,
                       ReferenceGradients& gradients, const KeySums& sums) {
  const std::int64_t dim = problem.head_dim;
  widen_keys_and_values(problem, tensors, item, work);
  const double value_norm = largest_value_norm(item.seq_k, dim, work);
  const std::int64_t group = problem.group_size();
  const std::int64_t first_head = item.kv_head * group;
  if (part == 0) {
    for (std::int64_t head = first_head; head < first_head + group; ++head) {
      zero_query_rows(problem, item, head, item.seq_q, gradients);
    }
    store_key_abs_sum(problem, item, work, gradients);
  }
  const std::int64_t blocks = (item.seq_q + kRowsPerBlock - 1) / kRowsPerBlock;
  const std::int64_t pairs = group * blocks;
  for (std::int64_t pair = part * pairs / parts; pair < (part + 1) * pairs / parts; ++pair) {
    const std::int64_t first = pair % blocks * kRowsPerBlock;
    RowBlock block{first_head + pair / blocks, first, std::min(kRowsPerBlock, item.seq_q - first),
                   0};
    // Both ends of a row's keys move right as rows go down: the last row sees the furthest.
    const KeyRange last = problem.visible_keys_of(item.batch, first + block.rows - 1);
    block.keys = last.empty() ? 0 : last.end;
    widen_query_rows(problem, tensors, grad_output, item, block, work);
    probabilities_for_block(problem, item, block, work);
    score_gradients_for_block(problem, item, block, value_norm, work, gradients);
    accumulate_gradients_for_block(problem, item, block, work, gradients);
  }
  store_key_sums(problem, item, work, sums);
}

// Parts per kv head: enough items for every thread twice over when there are few (batch, kv head)
// pairs (MQA, one long head), as long as the parts' slots stay within kMaxPartBytes.
constexpr double kMaxPartBytes = 256.0 * (1 << 20);
std::int64_t parts_per_kv_head(const AttentionProblem& problem, int threads) {
  const std::int64_t pairs_of_kv_heads =
      std::max<std::int64_t>(1, problem.batch * problem.kv_heads);
  const std::int64_t wanted = (2 * threads + pairs_of_kv_heads - 1) / pairs_of_kv_heads;
  const std::int64_t pairs =
      problem.group_size() * ((problem.seq_len_q + kRowsPerBlock - 1) / kRowsPerBlock);
  const double slot_bytes = static_cast<double>(part_slot_elements(problem)) * sizeof(double);
  const auto affordable =
      static_cast<std::int64_t>(kMaxPartBytes / (slot_bytes * pairs_of_kv_heads));
  return std::max<std::int64_t>(1, std::min({wanted, pairs, affordable}));
}

// The parts' sums added up in part order, into the result.
void add_up_parts(const AttentionProblem& problem, std::int64_t parts, LargeBuffer<double>& slots,
                  ReferenceGradients& gradients, int threads) {
  const std::int64_t slot = part_slot_elements(problem);
  parallel_for(
      problem.batch * problem.kv_heads,
      [&](std::int64_t index) {
        KeyValueHead item{index / problem.kv_heads, index % problem.kv_heads, 0, 0};
        const KeySums to = sums_in_result(problem, item, gradients);
        const std::int64_t rows = problem.seq_len_k * problem.head_dim;
        const std::int64_t dim = problem.head_dim;
        for (std::int64_t part = 0; part < parts; ++part) {
          const KeySums from = sums_in_slot(problem, slots.data() + (index * parts + part) * slot);
          // Part 0 is copied, the others added: the same order, so the same bits, on every run.
          const auto add = [part](const double* values, std::int64_t count, double* sum) {
            for (std::int64_t e = 0; e < count; ++e)
              sum[e] = part == 0 ? values[e] : sum[e] + values[e];
          };
          add(from.dk, rows, to.dk);
          add(from.dv, rows, to.dv);
          add(from.dk_magnitude, rows, to.dk_magnitude);
          add(from.dv_magnitude, rows, to.dv_magnitude);
          add(from.query_abs_sum, dim, to.query_abs_sum);
          add(from.grad_output_abs_sum, dim, to.grad_output_abs_sum);
        }
      },
      threads);
}

}  // namespace

void reference_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                        const std::uint16_t* grad_output, ReferenceGradients& gradients,
                        int threads) {
  use_single_threaded_blas();
  const std::int64_t dim = problem.head_dim;
  const auto query_elements =
      static_cast<std::size_t>(problem.batch * problem.heads * problem.seq_len_q * dim);
  const auto key_elements =
      static_cast<std::size_t>(problem.batch * problem.kv_heads * problem.seq_len_k * dim);
  for (LargeBuffer<double>* buffer : {&gradients.dq, &gradients.dq_magnitude}) {
    resize_for_overwrite(*buffer, query_elements);
  }
  for (LargeBuffer<double>* buffer :
       {&gradients.dk, &gradients.dv, &gradients.dk_magnitude, &gradients.dv_magnitude}) {
    resize_for_overwrite(*buffer, key_elements);
  }
  for (LargeBuffer<double>* buffer :
       {&gradients.key_abs_sum, &gradients.query_abs_sum, &gradients.grad_output_abs_sum}) {
    resize_for_overwrite(*buffer, static_cast<std::size_t>(problem.batch * problem.kv_heads * dim));
  }
  for (LargeBuffer<double>* buffer :
       {&gradients.output_dot, &gradients.gradient_scale, &gradients.largest_weight}) {
    resize_for_overwrite(*buffer, query_elements / static_cast<std::size_t>(dim));
  }
  const std::int64_t parts =
      parts_per_kv_head(problem, threads > 0 ? threads : default_thread_count());
  // The parts' sums, when a kv head is split; kept from call to call by the calling thread, and
  // reached by the workers through this reference (a thread_local named in the lambda would be
  // each worker's own).
  thread_local LargeBuffer<double> kept_slots;
  LargeBuffer<double>& slots = kept_slots;
  if (parts > 1) {
    resize_for_overwrite(slots, static_cast<std::size_t>(problem.batch * problem.kv_heads * parts *
                                                         part_slot_elements(problem)));
  }
  parallel_for(
      problem.batch * problem.kv_heads * parts,
      [&](std::int64_t index) {
        thread_local Workspace work;
        const std::int64_t kv_head_index = index / parts;
        KeyValueHead item{kv_head_index / problem.kv_heads, kv_head_index % problem.kv_heads, 0, 0};
        item.seq_q = problem.seq_len_q_of(item.batch);
        item.seq_k = problem.seq_len_k_of(item.batch);
        const KeySums sums =
            parts == 1 ? sums_in_result(problem, item, gradients)
                       : sums_in_slot(problem, slots.data() + index * part_slot_elements(problem));
        backward_for_part(problem, tensors, grad_output, item, index % parts, parts, work,
                          gradients, sums);
      },
      threads);
  if (parts > 1) add_up_parts(problem, parts, slots, gradients, threads);
}

ReferenceGradients reference_backward(const AttentionProblem& problem,
                                      const AttentionTensors& tensors,
                                      const std::uint16_t* grad_output, int threads) {
  ReferenceGradients gradients;
  reference_backward(problem, tensors, grad_output, gradients, threads);
  return gradients;
}

}  // namespace attnfuzz
