// SPDX-License-Identifier: BSD-3-Clause
/* attnfuzz plugin ABI: put your attention kernel under attnfuzz's test without rebuilding it.
 *
 * Build a shared library that includes this header and defines the five functions below (plain C
 * linkage, these exact names), then run
 *     fuzz_attention --kernel-lib ./libmy_attention.so --configs corpus/matrix/pr.json
 * The harness owns all memory: it allocates the inputs (on the host, or on the CUDA device when
 * your plugin says it runs there), fills the output with a NaN poison pattern fenced by guard
 * margins, calls your forward function, and checks everything afterwards. Your plugin only
 * computes. docs/plugin.md walks through writing, building and running one.
 *
 * Tensors are [batch][seq][head][head_dim] addressed by element strides (head_dim stride is 1):
 *     element (b, s, h, d) of Q is q[b * q_strides.batch + s * q_strides.seq + h * q_strides.head + d]
 * Elements are raw IEEE fp16 or bfloat16 bit patterns (uint16_t).
 * GQA/MQA: query head h reads key/value head h / (heads / kv_heads).
 * Causal (bottom-right aligned, as FlashAttention): query i sees key j iff
 *     j <= i + seq_len_k - seq_len_q; a query row that sees no key must produce 0.
 *
 * C only, no C++ in this header; bump ATTNFUZZ_PLUGIN_ABI_VERSION on any incompatible change. */
#ifndef ATTNFUZZ_PLUGIN_H
#define ATTNFUZZ_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNFUZZ_PLUGIN_ABI_VERSION 1

/* Input and output element types. */
#define ATTNFUZZ_DTYPE_FP16 0
#define ATTNFUZZ_DTYPE_BF16 1

/* Where the plugin's forward function wants its tensors. */
#define ATTNFUZZ_SITE_HOST 0
#define ATTNFUZZ_SITE_CUDA_DEVICE 1

/* What attnfuzz_plugin_forward returns. */
#define ATTNFUZZ_STATUS_OK 0
#define ATTNFUZZ_STATUS_ERROR 1

typedef struct attnfuzz_strides {
  int64_t batch; /* elements between batches */
  int64_t seq;   /* elements between sequence positions */
  int64_t head;  /* elements between heads */
} attnfuzz_strides;

typedef struct attnfuzz_problem {
  int64_t batch;
  int64_t heads;    /* query heads */
  int64_t kv_heads; /* key/value heads; heads is a multiple of kv_heads */
  int64_t seq_len_q;
  int64_t seq_len_k;
  int64_t head_dim;
  int32_t dtype;        /* ATTNFUZZ_DTYPE_* */
  int32_t causal;       /* 0 or 1 */
  double softmax_scale; /* multiply Q.K by this before the softmax */
  attnfuzz_strides q_strides, k_strides, v_strides, o_strides;
} attnfuzz_problem;

typedef struct attnfuzz_tensors {
  const uint16_t* q; /* element [0, 0, 0, 0] of each tensor, in the plugin's memory site */
  const uint16_t* k;
  const uint16_t* v;
  uint16_t* o;
  void* cuda_stream; /* cudaStream_t to launch on, for ATTNFUZZ_SITE_CUDA_DEVICE; else NULL */
} attnfuzz_tensors;

/* The five symbols a plugin exports. */

/* Must return ATTNFUZZ_PLUGIN_ABI_VERSION as the plugin saw it when it was compiled. */
int attnfuzz_plugin_abi_version(void);

/* The kernel's name in reports and replay commands: letters, digits, '_' and '-'. */
const char* attnfuzz_plugin_name(void);

/* ATTNFUZZ_SITE_HOST or ATTNFUZZ_SITE_CUDA_DEVICE. */
int attnfuzz_plugin_site(void);

/* 1 when the plugin can run `problem`; 0 when not, with a one-line reason written (NUL-terminated,
 * at most reason_size bytes) into `reason`. Such a case is skipped with that reason, never failed. */
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size);

/* Computes O for `problem`. Returns ATTNFUZZ_STATUS_OK, or ATTNFUZZ_STATUS_ERROR with a one-line
 * message written into `error` (NUL-terminated, at most error_size bytes). A CUDA plugin may
 * return before its kernels finish on `tensors->cuda_stream`: the harness synchronises. */
int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* ATTNFUZZ_PLUGIN_H */
