// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's backward pass (variant_attention.h): per query row, P recomputed from the
 * scores and the forward's log-sum-exp, dV += P^T dO, dP = dO V^T, dS = P * (dP - D) with
 * D = rowsum(dO * O), and dQ, dK from dS through the scale (and softcap's slope). A GQA group's
 * query heads add into one dK and dV of their kv head. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu_plugin/half_bits.h"
#include "variant_attention.h"

int variant_attention_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                        size_t reason_size) {
  if (problem->forward.page_size > 0) {
    snprintf(reason, reason_size, "paged K/V is forward-only in this example");
    return 0;
  }
  return variant_attention_supports(&problem->forward, reason, reason_size);
}

/* head_dim consecutive elements (one row of one head) widened to fp32, and back. */
static void load_row(const uint16_t* row, int64_t head_dim, int32_t dtype, float* into) {
  for (int64_t d = 0; d < head_dim; ++d) into[d] = half_bits_to_float(row[d], dtype);
}

static void store_row(const float* row, int64_t head_dim, int32_t dtype, uint16_t* into) {
  for (int64_t d = 0; d < head_dim; ++d) into[d] = float_to_half_bits(row[d], dtype);
}

int variant_attention_backward(const attnfuzz_backward_problem* bp, const attnfuzz_tensors_v2* t,
                               const attnfuzz_backward_tensors* g, int drop_rowsum, char* error,
                               size_t error_size) {
  const attnfuzz_problem_v2* p = &bp->forward;
  const attnfuzz_problem* base = &p->base;
  if (!variant_attention_supports_backward(bp, error, error_size)) return ATTNFUZZ_STATUS_ERROR;
  const int64_t head_dim = base->head_dim;
  const int64_t group = base->heads / base->kv_heads;
  const size_t key_elements = (size_t)(base->seq_len_k > 0 ? base->seq_len_k : 1) * head_dim;
  /* One kv head's dK and dV in fp32, over every query row of its group. */
  float* dk = malloc(sizeof(float) * key_elements);
  float* dv = malloc(sizeof(float) * key_elements);
  float query[VARIANT_ATTENTION_MAX_HEAD_DIM], grad_out[VARIANT_ATTENTION_MAX_HEAD_DIM];
  float row[VARIANT_ATTENTION_MAX_HEAD_DIM], dq[VARIANT_ATTENTION_MAX_HEAD_DIM];
  if (dk == NULL || dv == NULL) {
    free(dk);
    free(dv);
    snprintf(error, error_size, "out of memory for %zu gradient elements", 2 * key_elements);
    return ATTNFUZZ_STATUS_ERROR;
  }
  const float scale = (float)base->softmax_scale;
  for (int64_t b = 0; b < base->batch; ++b) {
    const int64_t seq_q = variant_sequence_length(p->varlen_q, t->cu_seqlens_q, b, base->seq_len_q);
    const int64_t seq_k = variant_sequence_length(p->varlen_k, t->cu_seqlens_k, b, base->seq_len_k);
    for (int64_t kv = 0; kv < base->kv_heads; ++kv) {
      memset(dk, 0, sizeof(float) * (size_t)seq_k * (size_t)head_dim);
      memset(dv, 0, sizeof(float) * (size_t)seq_k * (size_t)head_dim);
      for (int64_t h = kv * group; h < (kv + 1) * group; ++h) {
        for (int64_t i = 0; i < seq_q; ++i) {
          load_row(t->base.q + variant_query_offset(p, t->cu_seqlens_q, &base->q_strides, b, i, h),
                   head_dim, base->dtype, query);
          load_row(g->grad_output +
                       variant_query_offset(p, t->cu_seqlens_q, &bp->grad_output_strides, b, i, h),
                   head_dim, base->dtype, grad_out);
          load_row(t->base.o + variant_query_offset(p, t->cu_seqlens_q, &base->o_strides, b, i, h),
                   head_dim, base->dtype, row);
          float rowsum = 0.0f; /* D_i = dO_i . O_i */
          for (int64_t d = 0; d < head_dim; ++d) rowsum += grad_out[d] * row[d];
          if (drop_rowsum) rowsum = 0.0f;
          const int64_t lse_row =
              p->varlen_q ? t->cu_seqlens_q[b] + i : b * p->lse_strides.batch + i;
          const float lse = t->lse[lse_row + h * p->lse_strides.head];
          for (int64_t d = 0; d < head_dim; ++d) dq[d] = 0.0f;
          const variant_key_range keys = variant_visible_keys(p, i, seq_q, seq_k, 0);
          for (int64_t j = keys.first; j < keys.last; ++j) {
            float slope = 1.0f;
            const float score =
                variant_attention_score(p, t, query, b, h, kv, i + seq_k - seq_q, j, &slope);
            const float probability = expf(score - lse);
            const uint16_t* v = t->base.v + variant_key_offset(p, t, &base->v_strides, b, j, kv);
            const uint16_t* k = t->base.k + variant_key_offset(p, t, &base->k_strides, b, j, kv);
            float dp = 0.0f; /* dP_ij = dO_i . V_j */
            for (int64_t d = 0; d < head_dim; ++d) {
              dp += grad_out[d] * half_bits_to_float(v[d], base->dtype);
            }
            /* dS_ij, carried back through the softcap and the scale to Q . K. */
            const float dscore = probability * (dp - rowsum) * slope * scale;
            for (int64_t d = 0; d < head_dim; ++d) {
              dq[d] += dscore * half_bits_to_float(k[d], base->dtype);
              dk[j * head_dim + d] += dscore * query[d];
              dv[j * head_dim + d] += probability * grad_out[d];
            }
          }
          store_row(dq, head_dim, base->dtype,
                    g->dq + variant_query_offset(p, t->cu_seqlens_q, &bp->dq_strides, b, i, h));
        }
      }
      for (int64_t j = 0; j < seq_k; ++j) {
        store_row(dk + j * head_dim, head_dim, base->dtype,
                  g->dk + variant_key_offset(p, t, &bp->dk_strides, b, j, kv));
        store_row(dv + j * head_dim, head_dim, base->dtype,
                  g->dv + variant_key_offset(p, t, &bp->dv_strides, b, j, kv));
      }
    }
  }
  free(dk);
  free(dv);
  return ATTNFUZZ_STATUS_OK;
}
