// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's attention forward pass and what its backward shares with it
 * (variant_attention.h). */
#include "variant_attention.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../cpu_plugin/half_bits.h"
#include "fp8_bits.h"

/* How the forward reads Q, K and V: each its dtype (ATTNFUZZ_DTYPE_*: 16-bit words, or bytes for
 * fp8) and its descale factors, [batch][kv_heads] (NULL: a factor of 1). */
typedef struct variant_storage {
  int32_t q_dtype, k_dtype, v_dtype;
  const float *q_descale, *k_descale, *v_descale;
} variant_storage;

/* Every input in the problem's dtype, none descaled: versions 1 to 3. */
static variant_storage storage_of_dtype(int32_t dtype) {
  const variant_storage storage = {dtype, dtype, dtype, NULL, NULL, NULL};
  return storage;
}

/* Element `offset` of a tensor of `dtype`. */
static float load(const uint16_t* tensor, int32_t dtype, int64_t offset) {
  if (dtype == ATTNFUZZ_DTYPE_E4M3 || dtype == ATTNFUZZ_DTYPE_E5M2) {
    return fp8_bits_to_float(((const uint8_t*)tensor)[offset], dtype);
  }
  return half_bits_to_float(tensor[offset], dtype);
}

static float descale_factor(const float* descale, int64_t kv_heads, int64_t b, int64_t kv) {
  return descale == NULL ? 1.0f : descale[b * kv_heads + kv];
}

int variant_attention_supports(const attnfuzz_problem_v2* problem, char* reason,
                               size_t reason_size) {
  if (problem->base.head_dim > VARIANT_ATTENTION_MAX_HEAD_DIM) {
    snprintf(reason, reason_size, "head_dim %lld is more than %d",
             (long long)problem->base.head_dim, VARIANT_ATTENTION_MAX_HEAD_DIM);
    return 0;
  }
  return 1;
}

int64_t variant_sequence_length(int32_t packed, const int32_t* cu_seqlens, int64_t b,
                                int64_t longest) {
  return packed ? cu_seqlens[b + 1] - cu_seqlens[b] : longest;
}

int64_t variant_query_offset(const attnfuzz_problem_v2* p, const int32_t* cu_seqlens_q,
                             const attnfuzz_strides* strides, int64_t b, int64_t row,
                             int64_t head) {
  const int64_t rows = p->varlen_q ? cu_seqlens_q[b] * strides->seq : b * strides->batch;
  return rows + row * strides->seq + head * strides->head;
}

int64_t variant_key_offset(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                           const attnfuzz_strides* strides, int64_t b, int64_t key, int64_t head) {
  int64_t rows;
  if (p->page_size > 0) {
    const int64_t page = t->block_table[b * p->pages_per_sequence + key / p->page_size];
    rows = page * strides->batch + (key % p->page_size) * strides->seq;
  } else if (p->varlen_k) {
    rows = (t->cu_seqlens_k[b] + key) * strides->seq;
  } else {
    rows = b * strides->batch + key * strides->seq;
  }
  return rows + head * strides->head;
}

variant_key_range variant_visible_keys(const attnfuzz_problem_v2* p, int64_t i, int64_t seq_q,
                                       int64_t seq_k, int window_slack) {
  /* The diagonal i + Sk - Sq bounds the causal mask and the window. */
  const int64_t diagonal = i + seq_k - seq_q;
  variant_key_range keys = {0, seq_k};
  if (p->base.causal && diagonal + 1 < keys.last) keys.last = diagonal + 1;
  if (p->window_right >= 0 && diagonal + p->window_right + 1 < keys.last) {
    keys.last = diagonal + p->window_right + 1;
  }
  if (p->window_left >= 0 && diagonal - p->window_left - window_slack > keys.first) {
    keys.first = diagonal - p->window_left - window_slack;
  }
  return keys;
}

/* variant_attention_score with Q's and K's factors folded into the scale, as FlashAttention 3. */
static float score_of(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                      const variant_storage* storage, const float* query, int64_t b, int64_t h,
                      int64_t kv, int64_t diagonal, int64_t j, float* softcap_slope) {
  const attnfuzz_problem* base = &p->base;
  const int64_t k = variant_key_offset(p, t, &base->k_strides, b, j, kv);
  float dot = 0.0f;
  for (int64_t d = 0; d < base->head_dim; ++d) {
    dot += query[d] * load(t->base.k, storage->k_dtype, k + d);
  }
  const float scale = (float)base->softmax_scale *
                      descale_factor(storage->q_descale, base->kv_heads, b, kv) *
                      descale_factor(storage->k_descale, base->kv_heads, b, kv);
  float score = dot * scale;
  float slope = 1.0f;
  if (p->softcap > 0.0) {
    const float capped = tanhf(score / (float)p->softcap);
    score = (float)p->softcap * capped;
    slope = 1.0f - capped * capped;
  }
  if (softcap_slope != NULL) *softcap_slope = slope;
  if (p->alibi) score -= t->alibi_slopes[h] * (float)llabs(diagonal - j);
  return score;
}

float variant_attention_score(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                              const float* query, int64_t b, int64_t h, int64_t kv,
                              int64_t diagonal, int64_t j, float* softcap_slope) {
  const variant_storage storage = storage_of_dtype(p->base.dtype);
  return score_of(p, t, &storage, query, b, h, kv, diagonal, j, softcap_slope);
}

static int forward_of(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                      const variant_storage* storage, int window_slack, char* error,
                      size_t error_size) {
  const attnfuzz_problem* base = &p->base;
  if (!variant_attention_supports(p, error, error_size)) return ATTNFUZZ_STATUS_ERROR;
  float* scores = malloc(sizeof(float) * (size_t)(base->seq_len_k > 0 ? base->seq_len_k : 1));
  float query[VARIANT_ATTENTION_MAX_HEAD_DIM], output[VARIANT_ATTENTION_MAX_HEAD_DIM];
  if (scores == NULL) {
    snprintf(error, error_size, "out of memory for %lld scores", (long long)base->seq_len_k);
    return ATTNFUZZ_STATUS_ERROR;
  }
  const int64_t group = base->heads / base->kv_heads;
  for (int64_t b = 0; b < base->batch; ++b) {
    const int64_t seq_q = variant_sequence_length(p->varlen_q, t->cu_seqlens_q, b, base->seq_len_q);
    const int64_t seq_k = variant_sequence_length(p->varlen_k, t->cu_seqlens_k, b, base->seq_len_k);
    for (int64_t h = 0; h < base->heads; ++h) {
      const int64_t kv = h / group;
      for (int64_t i = 0; i < seq_q; ++i) {
        const int64_t q = variant_query_offset(p, t->cu_seqlens_q, &base->q_strides, b, i, h);
        for (int64_t d = 0; d < base->head_dim; ++d) {
          query[d] = load(t->base.q, storage->q_dtype, q + d);
        }
        const variant_key_range keys = variant_visible_keys(p, i, seq_q, seq_k, window_slack);
        const int64_t first = keys.first, last = keys.last;
        float row_max = -INFINITY, row_sum = 0.0f;
        for (int64_t j = first; j < last; ++j) {
          const float score = score_of(p, t, storage, query, b, h, kv, i + seq_k - seq_q, j, NULL);
          scores[j] = score;
          if (score > row_max) row_max = score;
        }
        for (int64_t j = first; j < last; ++j) {
          scores[j] = expf(scores[j] - row_max);
          row_sum += scores[j];
        }
        for (int64_t d = 0; d < base->head_dim; ++d) output[d] = 0.0f;
        for (int64_t j = first; j < last; ++j) {
          const int64_t v = variant_key_offset(p, t, &base->v_strides, b, j, kv);
          for (int64_t d = 0; d < base->head_dim; ++d) {
            output[d] += scores[j] * load(t->base.v, storage->v_dtype, v + d);
          }
        }
        const int saw_keys = first < last;
        const float value_factor = descale_factor(storage->v_descale, base->kv_heads, b, kv);
        uint16_t* o =
            t->base.o + variant_query_offset(p, t->cu_seqlens_q, &base->o_strides, b, i, h);
        for (int64_t d = 0; d < base->head_dim; ++d) {
          o[d] =
              float_to_half_bits(saw_keys ? output[d] / row_sum * value_factor : 0.0f, base->dtype);
        }
        if (p->return_lse) {
          const int64_t row = p->varlen_q ? t->cu_seqlens_q[b] + i : b * p->lse_strides.batch + i;
          t->lse[row + h * p->lse_strides.head] = saw_keys ? row_max + logf(row_sum) : -INFINITY;
        }
      }
    }
  }
  free(scores);
  return ATTNFUZZ_STATUS_OK;
}

int variant_attention_forward(const attnfuzz_problem_v2* p, const attnfuzz_tensors_v2* t,
                              int window_slack, char* error, size_t error_size) {
  const variant_storage storage = storage_of_dtype(p->base.dtype);
  return forward_of(p, t, &storage, window_slack, error, error_size);
}

int variant_attention_forward_v4(const attnfuzz_problem_v4* p, const attnfuzz_tensors_v4* t,
                                 int window_slack, char* error, size_t error_size) {
  const variant_storage storage = {p->q_dtype,   p->k_dtype,   p->v_dtype,
                                   t->q_descale, t->k_descale, t->v_descale};
  return forward_of(&p->v2, &t->v2, &storage, window_slack, error, error_size);
}
