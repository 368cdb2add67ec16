// SPDX-License-Identifier: BSD-3-Clause
/* The example plugin's attention forward pass (naive_attention.h). */
#include "naive_attention.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fp16 and bf16 bit patterns to and from float, round to nearest even ---- */

static float bits_to_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

static uint32_t float_to_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float load(uint16_t bits, int32_t dtype) {
  if (dtype == ATTNFUZZ_DTYPE_BF16) return bits_to_float((uint32_t)bits << 16);
  const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t fraction = bits & 0x3FFu;
  if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (fraction << 13));
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112u) << 23) | (fraction << 13));
  const float magnitude = ldexpf((float)fraction, -24); /* subnormal or zero: exact */
  return sign ? -magnitude : magnitude;
}

static uint16_t store(float value, int32_t dtype) {
  uint32_t bits = float_to_bits(value);
  if (dtype == ATTNFUZZ_DTYPE_BF16) {
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
  }
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
  if (magnitude >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (magnitude < 0x38800000u) { /* below fp16's normal range: a multiple of 2^-24 */
    const float rounded = bits_to_float(magnitude) + 0.5f;
    return (uint16_t)(sign | (float_to_bits(rounded) - float_to_bits(0.5f)));
  }
  uint32_t rebased = magnitude - (112u << 23);
  rebased += 0xFFFu + ((rebased >> 13) & 1u);
  return (uint16_t)(sign | (rebased >> 13));
}

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
        for (int64_t d = 0; d < p->head_dim; ++d) query[d] = load(q[d], p->dtype);
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
          for (int64_t d = 0; d < p->head_dim; ++d) dot += query[d] * load(k[d], p->dtype);
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
          for (int64_t d = 0; d < p->head_dim; ++d) output[d] += scores[j] * load(v[d], p->dtype);
        }
        uint16_t* o = t->o + b * p->o_strides.batch + i * p->o_strides.seq + h * p->o_strides.head;
        for (int64_t d = 0; d < p->head_dim; ++d) {
          o[d] = store(visible == 0 ? 0.0f : output[d] / row_sum, p->dtype);
        }
      }
    }
  }
  free(scores);
  return ATTNFUZZ_STATUS_OK;
}
