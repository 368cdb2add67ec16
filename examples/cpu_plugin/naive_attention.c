// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's attention forward pass (naive_attention.h). */
#include "naive_attention.h"

#include "half_bits.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- attention ---- */

int naive_attention_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  if (problem->head_dim > NAIVE_ATTENTION_MAX_HEAD_DIM) {
    snprintf(reason, reason_size, "head_dim %lld is more than %d", (long long)problem->head_dim,
             NAIVE_ATTENTION_MAX_HEAD_DIM);
    return 0;
  }
  return 1;
}

int naive_attention_forward(const attnfuzz_problem* p, const attnfuzz_tensors* t, int causal_slack,
                            char* error, size_t error_size) {
  if (!naive_attention_supports(p, error, error_size)) return ATTNFUZZ_STATUS_ERROR;
  float* scores = malloc(sizeof(float) * (size_t)p->seq_len_k);
  float query[NAIVE_ATTENTION_MAX_HEAD_DIM], output[NAIVE_ATTENTION_MAX_HEAD_DIM];
  if (scores == NULL) {
    snprintf(error, error_size, "out of memory for %lld scores", (long long)p->seq_len_k);
    return ATTNFUZZ_STATUS_ERROR;
  }
  const int64_t group = p->heads / p->kv_heads;
  for (int64_t b = 0; b < p->batch; ++b) {
    for (int64_t h = 0; h < p->heads; ++h) {
      const int64_t kv = h / group;
      for (int64_t i = 0; i < p->seq_len_q; ++i) {
        const uint16_t* q =
            t->q + b * p->q_strides.batch + i * p->q_strides.seq + h * p->q_strides.head;
        for (int64_t d = 0; d < p->head_dim; ++d) query[d] = half_bits_to_float(q[d], p->dtype);
        int64_t visible = p->seq_len_k; /* keys 0 .. visible - 1 */
        if (p->causal) {
          visible = i + p->seq_len_k - p->seq_len_q + 1 + causal_slack;
          if (visible < 0) visible = 0;
          if (visible > p->seq_len_k) visible = p->seq_len_k;
        }
        float row_max = -INFINITY, row_sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          const uint16_t* k =
              t->k + b * p->k_strides.batch + j * p->k_strides.seq + kv * p->k_strides.head;
          float dot = 0.0f;
          for (int64_t d = 0; d < p->head_dim; ++d)
            dot += query[d] * half_bits_to_float(k[d], p->dtype);
          scores[j] = dot * (float)p->softmax_scale;
          if (scores[j] > row_max) row_max = scores[j];
        }
        for (int64_t j = 0; j < visible; ++j) {
          scores[j] = expf(scores[j] - row_max);
          row_sum += scores[j];
        }
        for (int64_t d = 0; d < p->head_dim; ++d) output[d] = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          const uint16_t* v =
              t->v + b * p->v_strides.batch + j * p->v_strides.seq + kv * p->v_strides.head;
          for (int64_t d = 0; d < p->head_dim; ++d)
            output[d] += scores[j] * half_bits_to_float(v[d], p->dtype);
        }
        uint16_t* o = t->o + b * p->o_strides.batch + i * p->o_strides.seq + h * p->o_strides.head;
        for (int64_t d = 0; d < p->head_dim; ++d) {
          o[d] = float_to_half_bits(visible == 0 ? 0.0f : output[d] / row_sum, p->dtype);
        }
      }
    }
  }
  free(scores);
  return ATTNFUZZ_STATUS_OK;
}
