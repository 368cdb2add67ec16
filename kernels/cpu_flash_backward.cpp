// SPDX-License-Identifier: BSD-3-Clause
// cpu_flash's backward: FlashAttention-2's backward algorithm on the CPU, one (batch, kv head) at
// a time so that its dK and dV have one writer. For each query head of the group,
//   D_i = rowsum(dO_i * O_i)                     fp32, from the forward's O in the input dtype
//   for each key tile of block_n keys (the outer loop, as FlashAttention-2's CTAs):
//     for each query row that sees a key of the tile:
//       S = Q_i K^T * scale, soft-capped (T = tanh(S / softcap)), ALiBi-biased, masked
//       P = exp(S - L_i)                         fp32, from the forward's log-sum-exp
//       dV_tile += round_to_dtype(P) dO_i        fp32 accumulators
//       dP = dO_i V_tile^T                       fp32
//       dS = P (dP - D_i) (1 - T^2 when soft-capped), rounded to the input dtype
//       dQ_i += dS K_tile; dK_tile += dS^T Q_i   fp32 (FlashAttention-2 adds dQ atomically)
// then dQ = round(scale dQ) per head, and after the group dK = round(scale dK), dV = round(dV):
// the group's heads are summed in fp32 here, the tighter of the orders the bound allows.
// The backward plants (ATTNFUZZ_BACKWARD_PLANTED_BUGS) each change a line or two of this, as the
// real bug would.
#include "kernels/cpu_flash_backward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/dtype_bulk.h"
#include "core/parallel_for.h"
#include "kernels/flash_tile_traits.h"

namespace attnfuzz {
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();
constexpr float kLog2E = 1.44269504f;

struct BackwardCall {
  const AttentionProblem& problem;
  const AttentionTensors& tensors;
  const BackwardTensors& gradients;
  std::span<const float> widen;
  int block_n;
  PlantedBug plant;
  bool planted(PlantedBug bug) const { return plant == bug; }
};

// One (batch, kv head): its sequence's lengths and its fp32 working set.
struct GroupWork {
  std::int64_t batch = 0, kv_head = 0, seq_q = 0, seq_k = 0;
  std::vector<float> key, value;               // [seq_k][dim]
  std::vector<float> dk, dv;                   // [seq_k][dim], the group's sums
  std::vector<float> query, grad_output, dq;   // [seq_q][dim], one head's
  std::vector<float> log_sum_exp, output_dot;  // [seq_q]
};

void widen_row(const BackwardCall& call, const std::uint16_t* row, float* out) {
  for (std::int64_t d = 0; d < call.problem.head_dim; ++d) out[d] = call.widen[row[d]];
}

void load_keys_and_values(const BackwardCall& call, GroupWork& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const auto elements = static_cast<std::size_t>(work.seq_k * dim);
  work.key.resize(elements);
  work.value.resize(elements);
  work.dk.assign(elements, 0.0f);
  work.dv.assign(elements, 0.0f);
  // backward_varlen_key_offset: a packed sequence's keys read from one row early (the previous
  // sequence's last; none before the first row of the buffer).
  const std::int64_t shift = call.planted(PlantedBug::backward_varlen_key_offset) &&
                                     problem.varlen_k && work.batch > 0 &&
                                     call.tensors.cu_seqlens_k[work.batch] > 0
                                 ? -1
                                 : 0;
  for (std::int64_t j = 0; j < work.seq_k; ++j) {
    widen_row(call,
              call.tensors.k + problem.k_row_offset(work.batch, j) + shift * problem.k_strides.seq +
                  work.kv_head * problem.k_strides.head,
              &work.key[j * dim]);
    widen_row(call,
              call.tensors.v + problem.v_row_offset(work.batch, j) + shift * problem.v_strides.seq +
                  work.kv_head * problem.v_strides.head,
              &work.value[j * dim]);
  }
}

// Q, dO, the log-sum-exp and D = rowsum(dO * O) of one query head's rows.
void load_query_head(const BackwardCall& call, std::int64_t head, GroupWork& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const auto elements = static_cast<std::size_t>(work.seq_q * dim);
  work.query.resize(elements);
  work.grad_output.resize(elements);
  work.dq.assign(elements, 0.0f);
  work.log_sum_exp.resize(static_cast<std::size_t>(work.seq_q));
  work.output_dot.resize(static_cast<std::size_t>(work.seq_q));
  for (std::int64_t i = 0; i < work.seq_q; ++i) {
    widen_row(call,
              call.tensors.q + problem.q_row_offset(work.batch, i) + head * problem.q_strides.head,
              &work.query[i * dim]);
    const std::int64_t o_offset =
        problem.o_row_offset(work.batch, i) + head * problem.o_strides.head;
    widen_row(call, call.gradients.grad_output + o_offset, &work.grad_output[i * dim]);
    // backward_rowsum_from_next_row: the next row's O (the last row keeps its own).
    const std::int64_t o_row =
        call.planted(PlantedBug::backward_rowsum_from_next_row) && i + 1 < work.seq_q
            ? problem.o_row_offset(work.batch, i + 1) + head * problem.o_strides.head
            : o_offset;
    float dot = 0.0f;
    for (std::int64_t d = 0; d < dim; ++d) {
      dot += work.grad_output[i * dim + d] * call.widen[call.tensors.o[o_row + d]];
    }
    work.output_dot[i] = call.planted(PlantedBug::backward_rowsum_dropped) ? 0.0f : dot;
    work.log_sum_exp[i] = call.tensors.lse[problem.lse_offset(work.batch, i, head)];
  }
}

// One query row against one key tile [first_key, end_key): P, dV, dP, dS, dQ and dK.
void add_row_of_key_tile(const BackwardCall& call, std::int64_t head, std::int64_t i,
                         std::int64_t first_key, std::int64_t end_key, GroupWork& work) {
  const AttentionProblem& problem = call.problem;
  const std::int64_t dim = problem.head_dim;
  const float lse = work.log_sum_exp[i];
  if (lse == kNegativeInfinity) return;  // the row sees no key: P = 0
  // backward_mask_not_applied: every key of the sequence, the mask left to the forward.
  const KeyRange visible = call.planted(PlantedBug::backward_mask_not_applied)
                               ? KeyRange{0, work.seq_k}
                               : problem.visible_keys_of(work.batch, i);
  const std::int64_t first = std::max(first_key, visible.first);
  const std::int64_t end = std::min(end_key, visible.end);
  if (first >= end) return;
  const float scale = static_cast<float>(problem.softmax_scale);
  const float softcap = static_cast<float>(problem.softcap);
  const float slope = problem.alibi ? call.tensors.alibi_slopes[head] : 0.0f;
  const float* q = &work.query[i * dim];
  const float* grad_output = &work.grad_output[i * dim];
  for (std::int64_t j = first; j < end; ++j) {
    const float* k = &work.key[j * dim];
    float dot = 0.0f;
    for (std::int64_t d = 0; d < dim; ++d) dot += q[d] * k[d];
    float score = dot * scale;
    float cap_slope = 1.0f;
    if (softcap > 0.0f) {
      const float tanh_value = std::tanh(score / softcap);
      score = softcap * tanh_value;
      if (!call.planted(PlantedBug::backward_softcap_slope_forgotten)) {
        cap_slope = 1.0f - tanh_value * tanh_value;
      }
    }
    if (problem.alibi) {
      score -= slope * static_cast<float>(alibi_distance(i, j, work.seq_q, work.seq_k));
    }
    const float probability = call.planted(PlantedBug::backward_lse_log2)
                                  ? std::exp2(score * kLog2E - lse)
                                  : std::exp(score - lse);
    const float rounded_probability = round_to_dtype(probability, problem.dtype);
    const float* v = &work.value[j * dim];
    float* dv = &work.dv[j * dim];
    float grad_probability = 0.0f;
    for (std::int64_t d = 0; d < dim; ++d) {
      dv[d] += rounded_probability * grad_output[d];
      grad_probability += grad_output[d] * v[d];
    }
    const float score_gradient = round_to_dtype(
        probability * (grad_probability - work.output_dot[i]) * cap_slope, problem.dtype);
    float* dq = &work.dq[i * dim];
    float* dk = &work.dk[j * dim];
    for (std::int64_t d = 0; d < dim; ++d) {
      dq[d] += score_gradient * k[d];
      dk[d] += score_gradient * q[d];
    }
  }
}

void store_rows(const BackwardCall& call, const float* values, float factor, std::int64_t rows,
                const auto& row_address) {
  const std::int64_t dim = call.problem.head_dim;
  for (std::int64_t row = 0; row < rows; ++row) {
    std::uint16_t* out = row_address(row);
    for (std::int64_t d = 0; d < dim; ++d) {
      out[d] = float_to_dtype(values[row * dim + d] * factor, call.problem.dtype);
    }
  }
}

// dK = round(scale dK) and dV = round(dV) of one (batch, kv head) from their fp32 sums.
void store_key_gradients(const BackwardCall& call, std::int64_t batch, std::int64_t kv_head,
                         std::int64_t seq_k, const float* dk, const float* dv) {
  const AttentionProblem& problem = call.problem;
  const float dk_scale = call.planted(PlantedBug::backward_dk_unscaled)
                             ? 1.0f
                             : static_cast<float>(problem.softmax_scale);
  store_rows(call, dk, dk_scale, seq_k, [&](std::int64_t j) {
    return call.gradients.dk + problem.k_row_offset(batch, j) + kv_head * problem.k_strides.head;
  });
  store_rows(call, dv, 1.0f, seq_k, [&](std::int64_t j) {
    return call.gradients.dv + problem.v_row_offset(batch, j) + kv_head * problem.v_strides.head;
  });
}

// backward_gqa_modulo's dK and dV: each query head's part added into kv head head % kv_heads,
// [batch][kv_heads][seq_len_k][dim] fp32 sums; the items run one at a time to fill it.
struct MisroutedSums {
  std::vector<float> dk, dv;
  float* at(std::vector<float>& sums, const AttentionProblem& problem, std::int64_t batch,
            std::int64_t kv_head) {
    return sums.data() +
           (batch * problem.kv_heads + kv_head) * problem.seq_len_k * problem.head_dim;
  }
};

void backward_for_group(const BackwardCall& call, GroupWork& work, MisroutedSums* misrouted) {
  const AttentionProblem& problem = call.problem;
  const float scale = static_cast<float>(problem.softmax_scale);
  load_keys_and_values(call, work);
  const std::int64_t group = problem.group_size();
  for (std::int64_t head = work.kv_head * group; head < (work.kv_head + 1) * group; ++head) {
    if (misrouted != nullptr) {  // this head's part alone, to be added where the plant puts it
      std::fill(work.dk.begin(), work.dk.end(), 0.0f);
      std::fill(work.dv.begin(), work.dv.end(), 0.0f);
    }
    load_query_head(call, head, work);
    for (std::int64_t first_key = 0; first_key < work.seq_k; first_key += call.block_n) {
      const std::int64_t end_key = std::min(work.seq_k, first_key + call.block_n);
      if (call.planted(PlantedBug::backward_dq_last_key_tile_only)) {
        std::fill(work.dq.begin(), work.dq.end(), 0.0f);  // each tile's part overwrites the last's
      }
      for (std::int64_t i = 0; i < work.seq_q; ++i) {
        add_row_of_key_tile(call, head, i, first_key, end_key, work);
      }
    }
    store_rows(call, work.dq.data(), scale, work.seq_q, [&](std::int64_t i) {
      return call.gradients.dq + problem.q_row_offset(work.batch, i) +
             head * problem.q_strides.head;
    });
    if (misrouted != nullptr) {
      const std::int64_t target = head % problem.kv_heads;
      float* dk = misrouted->at(misrouted->dk, problem, work.batch, target);
      float* dv = misrouted->at(misrouted->dv, problem, work.batch, target);
      for (std::size_t e = 0; e < work.dk.size(); ++e) {
        dk[e] += work.dk[e];
        dv[e] += work.dv[e];
      }
    }
  }
  if (misrouted == nullptr) {
    store_key_gradients(call, work.batch, work.kv_head, work.seq_k, work.dk.data(), work.dv.data());
  }
}

}  // namespace

void cpu_flash_backward(const AttentionProblem& problem, const AttentionTensors& tensors,
                        const BackwardTensors& gradients, PlantedBug plant) {
  if (problem.paged()) throw std::runtime_error("cpu_flash's backward has no paged K/V");
  if (tensors.lse == nullptr && problem.query_rows() > 0) {
    throw std::runtime_error("cpu_flash's backward needs the forward's log-sum-exp");
  }
  const FlashTileConfig* tiles = find_tile_config(problem.head_dim);
  if (tiles == nullptr) throw std::runtime_error("cpu_flash has no tiles for this head dim");
  const BackwardCall call{problem,        tensors, gradients, widening_table(problem.dtype),
                          tiles->block_n, plant};
  const bool misroutes = call.planted(PlantedBug::backward_gqa_modulo);
  MisroutedSums misrouted;
  if (misroutes) {
    const auto elements = static_cast<std::size_t>(problem.batch * problem.kv_heads *
                                                   problem.seq_len_k * problem.head_dim);
    misrouted.dk.assign(elements, 0.0f);
    misrouted.dv.assign(elements, 0.0f);
  }
  const std::int64_t items = problem.batch * problem.kv_heads;
  const auto group_at = [&](std::int64_t item, GroupWork& work) {
    work.batch = item / problem.kv_heads;
    work.kv_head = item % problem.kv_heads;
    work.seq_q = problem.seq_len_q_of(work.batch);
    work.seq_k = problem.seq_len_k_of(work.batch);
  };
  parallel_for(
      items,
      [&](std::int64_t item) {
        thread_local GroupWork work;
        group_at(item, work);
        backward_for_group(call, work, misroutes ? &misrouted : nullptr);
      },
      misroutes ? 1 : 0);
  if (!misroutes) return;
  const auto rows = static_cast<std::size_t>(problem.seq_len_k * problem.head_dim);
  for (std::int64_t item = 0; item < items; ++item) {
    GroupWork where;
    group_at(item, where);
    const auto first = static_cast<std::size_t>(item) * rows;
    store_key_gradients(call, where.batch, where.kv_head, where.seq_k, misrouted.dk.data() + first,
                        misrouted.dv.data() + first);
  }
}

}  // namespace attnfuzz
