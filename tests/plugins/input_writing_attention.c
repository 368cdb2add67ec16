// SPDX-License-Identifier: BSD-3-Clause
/* Plugins of ABI version 2 (and 4, for fp8 inputs) that write what they were handed to read, or
 * past what they were handed to write, as kernels shipped with the bug do: the version 2 example's
 * correct attention (examples/cpu_plugin_v2/variant_attention.c) around one misuse of a buffer,
 * chosen by INPUT_FAULT, one of:
 *
 * - ZERO_INPUTS: zeroes Q, K and V in place, then computes on the zeros;
 * - REWRITE_BLOCK_TABLE (paged cases): points the block table at the logical pages, then computes
 *   through it;
 * - ZERO_SLOPES (ALiBi cases): zeroes the slopes, then computes without bias;
 * - EMPTY_CU_SEQLENS (varlen cases): zeroes cu_seqlens_q and cu_seqlens_k and writes nothing;
 * - SCALE_Q_AFTER: computes, then doubles Q in place (an in-place RoPE);
 * - WRITE_PAST_K: computes, then writes the element 64 past K's end;
 * - WRITE_PAST_O: computes, then writes the element 4096 past O's end;
 * - WRITE_PAST_LSE (cases with the log-sum-exp): computes, then writes the value 4096 past the
 *   log-sum-exp's last row;
 * - ZERO_FP8_K (version 4: fp8 inputs): zeroes the bytes of an fp8 K, then computes on the zeros;
 * - WRITE_PAST_FP8_K (version 4): computes, then writes the byte 64 past an fp8 K's end.
 *
 * (each INPUT_FAULT_ prefixed). A harness that computed its oracle, or counted rows, from the
 * buffers it handed the kernel would pass the first four. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attnfuzz/attnfuzz_plugin.h"
#include "cpu_plugin_v2/variant_attention.h"

#define INPUT_FAULT_ZERO_INPUTS 1
#define INPUT_FAULT_REWRITE_BLOCK_TABLE 2
#define INPUT_FAULT_ZERO_SLOPES 3
#define INPUT_FAULT_EMPTY_CU_SEQLENS 4
#define INPUT_FAULT_SCALE_Q_AFTER 5
#define INPUT_FAULT_WRITE_PAST_K 6
#define INPUT_FAULT_WRITE_PAST_O 7
#define INPUT_FAULT_WRITE_PAST_LSE 8
#define INPUT_FAULT_ZERO_FP8_K 9
#define INPUT_FAULT_WRITE_PAST_FP8_K 10

/* One past the last element a tensor of `rows` rows per (batch or page) spans. */
static int64_t span_of(const attnfuzz_strides* strides, int64_t outer, int64_t rows, int64_t heads,
                       int64_t head_dim) {
  if (outer <= 0 || rows <= 0) return 0;
  return (outer - 1) * strides->batch + (rows - 1) * strides->seq + (heads - 1) * strides->head +
         head_dim;
}

static int64_t q_span(const attnfuzz_problem_v2* problem) {
  const attnfuzz_problem* base = &problem->base;
  return problem->varlen_q
             ? span_of(&base->q_strides, 1, problem->total_q, base->heads, base->head_dim)
             : span_of(&base->q_strides, base->batch, base->seq_len_q, base->heads, base->head_dim);
}

static int64_t o_span(const attnfuzz_problem_v2* problem) {
  const attnfuzz_problem* base = &problem->base;
  return problem->varlen_q
             ? span_of(&base->o_strides, 1, problem->total_q, base->heads, base->head_dim)
             : span_of(&base->o_strides, base->batch, base->seq_len_q, base->heads, base->head_dim);
}

/* The index of the log-sum-exp's last row (ABI: attnfuzz_problem_v2's return_lse). */
static int64_t last_lse_row(const attnfuzz_problem_v2* problem) {
  const attnfuzz_problem* base = &problem->base;
  const int64_t last_in_head =
      problem->varlen_q ? problem->total_q - 1
                        : (base->batch - 1) * problem->lse_strides.batch + base->seq_len_q - 1;
  return last_in_head + (base->heads - 1) * problem->lse_strides.head;
}

static int64_t kv_span(const attnfuzz_problem_v2* problem, const attnfuzz_strides* strides) {
  const attnfuzz_problem* base = &problem->base;
  if (problem->page_size > 0) {
    return span_of(strides, problem->pages, problem->page_size, base->kv_heads, base->head_dim);
  }
  return problem->varlen_k
             ? span_of(strides, 1, problem->total_k, base->kv_heads, base->head_dim)
             : span_of(strides, base->batch, base->seq_len_k, base->kv_heads, base->head_dim);
}

/* A half or bfloat16 pattern doubled (the exponent raised by one; zeros, infinities and NaNs kept
 * as they are, and the largest finite values left alone rather than overflowed). */
static uint16_t doubled(uint16_t bits, int32_t dtype) {
  const int mantissa_bits = dtype == ATTNFUZZ_DTYPE_FP16 ? 10 : 7;
  const uint16_t exponent_mask = (uint16_t)(dtype == ATTNFUZZ_DTYPE_FP16 ? 0x7c00 : 0x7f80);
  const uint16_t exponent = (uint16_t)(bits & exponent_mask);
  if (exponent == 0 || exponent == exponent_mask) return bits;
  const uint16_t raised = (uint16_t)(exponent + (1u << mantissa_bits));
  return raised == exponent_mask ? bits : (uint16_t)((bits & ~exponent_mask) | raised);
}

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return "input_writing_attention";
}

int attnfuzz_plugin_site(void) {
  return ATTNFUZZ_SITE_HOST;
}

uint32_t attnfuzz_plugin_features(void) {
  const int fp8 =
      INPUT_FAULT == INPUT_FAULT_ZERO_FP8_K || INPUT_FAULT == INPUT_FAULT_WRITE_PAST_FP8_K;
  return VARIANT_ATTENTION_FEATURES | (fp8 ? ATTNFUZZ_FEATURE_FP8_INPUTS : 0u);
}

int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  return variant_attention_supports(problem, reason, reason_size);
}

int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  const attnfuzz_problem* base = &problem->base;
  /* The misuse: writing through pointers the ABI declares const. */
  uint16_t* q = (uint16_t*)tensors->base.q;
  uint16_t* k = (uint16_t*)tensors->base.k;
  uint16_t* v = (uint16_t*)tensors->base.v;
  const int64_t q_elements = q_span(problem);
  switch (INPUT_FAULT) {
    case INPUT_FAULT_ZERO_INPUTS:
      memset(q, 0, (size_t)q_elements * sizeof(uint16_t));
      memset(k, 0, (size_t)kv_span(problem, &base->k_strides) * sizeof(uint16_t));
      memset(v, 0, (size_t)kv_span(problem, &base->v_strides) * sizeof(uint16_t));
      break;
    case INPUT_FAULT_REWRITE_BLOCK_TABLE:
      if (tensors->block_table != NULL) {
        int32_t* table = (int32_t*)tensors->block_table;
        for (int64_t entry = 0; entry < base->batch * problem->pages_per_sequence; ++entry) {
          table[entry] = (int32_t)entry;
        }
      }
      break;
    case INPUT_FAULT_ZERO_SLOPES:
      if (tensors->alibi_slopes != NULL) {
        memset((float*)tensors->alibi_slopes, 0, (size_t)base->heads * sizeof(float));
      }
      break;
    case INPUT_FAULT_EMPTY_CU_SEQLENS:
      if (tensors->cu_seqlens_q != NULL || tensors->cu_seqlens_k != NULL) {
        if (tensors->cu_seqlens_q != NULL) {
          memset((int32_t*)tensors->cu_seqlens_q, 0, (size_t)(base->batch + 1) * sizeof(int32_t));
        }
        if (tensors->cu_seqlens_k != NULL) {
          memset((int32_t*)tensors->cu_seqlens_k, 0, (size_t)(base->batch + 1) * sizeof(int32_t));
        }
        return ATTNFUZZ_STATUS_OK; /* every sequence is empty now: nothing to write */
      }
      break;
    case INPUT_FAULT_ZERO_FP8_K: {
      /* Built for version 4: the pointers are to its structs, K's elements bytes when fp8. */
      const attnfuzz_problem_v4* fp8 = (const attnfuzz_problem_v4*)problem;
      if (fp8->k_dtype == ATTNFUZZ_DTYPE_E4M3 || fp8->k_dtype == ATTNFUZZ_DTYPE_E5M2) {
        memset(k, 0, (size_t)kv_span(problem, &base->k_strides));
      }
      return variant_attention_forward_v4(fp8, (const attnfuzz_tensors_v4*)tensors, 0, error,
                                          error_size);
    }
    case INPUT_FAULT_WRITE_PAST_FP8_K: {
      const attnfuzz_problem_v4* fp8 = (const attnfuzz_problem_v4*)problem;
      const int status = variant_attention_forward_v4(fp8, (const attnfuzz_tensors_v4*)tensors, 0,
                                                      error, error_size);
      if (fp8->k_dtype == ATTNFUZZ_DTYPE_E4M3 || fp8->k_dtype == ATTNFUZZ_DTYPE_E5M2) {
        ((uint8_t*)k)[kv_span(problem, &base->k_strides) + 63] = 0; /* in the guard tail */
      }
      return status;
    }
    default:
      break;
  }
  const int status = variant_attention_forward(problem, tensors, 0, error, error_size);
  if (status != ATTNFUZZ_STATUS_OK) return status;
  if (INPUT_FAULT == INPUT_FAULT_SCALE_Q_AFTER) {
    for (int64_t index = 0; index < q_elements; ++index) q[index] = doubled(q[index], base->dtype);
  }
  if (INPUT_FAULT == INPUT_FAULT_WRITE_PAST_O && o_span(problem) > 0) {
    tensors->base.o[o_span(problem) - 1 + 4096] = 0; /* past any guard margin */
  }
  if (INPUT_FAULT == INPUT_FAULT_WRITE_PAST_LSE && problem->return_lse && tensors->lse != NULL) {
    tensors->lse[last_lse_row(problem) + 4096] = 0.0f;
  }
  if (INPUT_FAULT == INPUT_FAULT_WRITE_PAST_K) {
    const int64_t past_end = kv_span(problem, &base->k_strides) + 63;
    k[past_end] = 0; /* past K's last element: the harness's guard tail holds poison there */
  }
  return ATTNFUZZ_STATUS_OK;
}

/* Version 1's entry points, which the harness never calls on a version 2 plugin. */
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size) {
  (void)problem;
  if (reason_size > 0) {
    strncpy(reason, "version 2 only", reason_size - 1);
    reason[reason_size - 1] = '\0';
  }
  return 0;
}

int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size) {
  (void)problem;
  (void)tensors;
  (void)error;
  (void)error_size;
  return ATTNFUZZ_STATUS_ERROR;
}
