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
 *     element (b, s, h, d) of Q is q[b * q_strides.batch + s * q_strides.seq + h * q_strides.head +
 * d] Each tensor has strides of its own: O's, K's and V's may differ from Q's and from one another
 * (a fresh or sliced O, a transposed V, views into one packed QKV buffer).
 * Elements are raw IEEE fp16 or bfloat16 bit patterns (uint16_t); version 4's fp8 inputs are one
 * byte per element (below). GQA/MQA: query head h reads
 * key/value head h / (heads / kv_heads). Causal (bottom-right aligned, as FlashAttention): query i
 * sees key j iff j <= i + seq_len_k - seq_len_q; a query row that sees no key must produce 0.
 *
 * Version 2 adds the attention variants (packed varlen batches, paged K/V, sliding windows, logit
 * soft-capping, ALiBi, the log-sum-exp output) through three more symbols, all optional: a plugin
 * that exports attnfuzz_plugin_features() is called through attnfuzz_plugin_supports_v2() and
 * attnfuzz_plugin_forward_v2(), and a case using a feature it does not declare is skipped for it
 * with a reason naming the feature. A version 1 plugin (or one built against this header without
 * them) keeps working unchanged: it gets the dense cases and skips the others.
 *
 * Version 3 adds the backward pass (dQ, dK, dV from dO), again optional: a plugin that declares
 * ATTNFUZZ_FEATURE_BACKWARD among its features exports attnfuzz_plugin_supports_backward() and
 * attnfuzz_plugin_backward(), and cases with "backward": true run it once its forward has passed
 * (a plugin on the CUDA device is handed device memory for every tensor, as its forward is).
 * Version 1 and 2 plugins skip those cases, naming why.
 *
 * Version 4 adds fp8 inputs (Q, K or V stored as OCP FP8 e4m3 or e5m2, with descale factors, as
 * FlashAttention 3 and fp8 KV caches take them) without new symbols: a version 4 plugin's
 * attnfuzz_plugin_supports_v2() and attnfuzz_plugin_forward_v2() are handed an
 * attnfuzz_problem_v4 and an attnfuzz_tensors_v4, whose first members are the version 2 structs
 * (cast the pointers to read the rest). A plugin that declares ATTNFUZZ_FEATURE_FP8_INPUTS gets
 * the cases with fp8 inputs; version 1 to 3 plugins, and plugins that do not declare it, skip
 * them, naming the feature.
 *
 * C only, no C++ in this header; bump ATTNFUZZ_PLUGIN_ABI_VERSION on any incompatible change. */
#ifndef ATTNFUZZ_PLUGIN_H
#define ATTNFUZZ_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNFUZZ_PLUGIN_ABI_VERSION 4
/* The oldest version this harness still loads. */
#define ATTNFUZZ_PLUGIN_ABI_OLDEST_VERSION 1

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

/* ---- version 2: the attention variants, FlashAttention's definitions ---- */

/* Features a plugin declares (attnfuzz_plugin_features), as bits. */
#define ATTNFUZZ_FEATURE_VARLEN 1u         /* packed sequences through cu_seqlens */
#define ATTNFUZZ_FEATURE_PAGED_KV 2u       /* K/V through a block table into a page pool */
#define ATTNFUZZ_FEATURE_SLIDING_WINDOW 4u /* window_left / window_right */
#define ATTNFUZZ_FEATURE_SOFTCAP 8u        /* logit soft-capping */
#define ATTNFUZZ_FEATURE_ALIBI 16u         /* ALiBi biases */
#define ATTNFUZZ_FEATURE_RETURN_LSE 32u    /* the log-sum-exp output */

typedef struct attnfuzz_problem_v2 {
  /* Version 1's fields, meaning what they meant; with varlen, seq_len_q and seq_len_k are the
   * longest sequences (FlashAttention's max_seqlen_q / max_seqlen_k), and a packed tensor's batch
   * stride is 0 (unused). */
  attnfuzz_problem base;
  /* Sliding window: query i of a sequence of Sq queries and Sk keys sees key j only if
   *   i + Sk - Sq - window_left <= j <= i + Sk - Sq + window_right;
   * -1 leaves a side unbounded; causal caps window_right at 0. */
  int64_t window_left, window_right;
  /* > 0: each scaled score s becomes softcap * tanh(s / softcap), before ALiBi. */
  double softcap;
  /* 1: score(i, j) of head h += -alibi_slopes[h] * |i + Sk - Sq - j|. */
  int32_t alibi;
  /* 1: write lse[row] = log(sum_j exp(score)) (fp32, natural log) of each query row: element
   * (b, i, h) at (varlen_q ? cu_seqlens_q[b] + i : b * lse_strides.batch + i) + h *
   * lse_strides.head; a row that sees no key stores -inf (or +inf). */
  int32_t return_lse;
  /* 1: Q and O are packed, sequence b's rows starting at row cu_seqlens_q[b] (total_q rows). */
  int32_t varlen_q;
  /* 1: sequence b has cu_seqlens_k[b + 1] - cu_seqlens_k[b] keys; unless paged, K and V are packed
   * by cu_seqlens_k as Q is by cu_seqlens_q (total_k rows). */
  int32_t varlen_k;
  int64_t total_q, total_k;
  /* > 0: K and V are a pool of `pages` pages of page_size rows (k_strides.batch steps from page to
   * page); key j of sequence b is row j % page_size of page
   * block_table[b * pages_per_sequence + j / page_size]. */
  int64_t page_size, pages, pages_per_sequence;
  attnfuzz_strides lse_strides; /* batch, seq (1), head */
} attnfuzz_problem_v2;

typedef struct attnfuzz_tensors_v2 {
  attnfuzz_tensors base;
  /* Index arrays, in the plugin's memory site; NULL when the problem does not use them. */
  const int32_t* cu_seqlens_q; /* [batch + 1] when varlen_q */
  const int32_t* cu_seqlens_k; /* [batch + 1] when varlen_k */
  /* [batch * pages_per_sequence] when page_size > 0, then 256 guard entries naming a page that no
   * sequence uses (its rows are poison) */
  const int32_t* block_table;
  const float* alibi_slopes; /* [heads] when alibi */
  float* lse;                /* the log-sum-exp output when return_lse */
} attnfuzz_tensors_v2;

/* ---- version 3: the backward pass ---- */

/* Feature bits of version 3 (attnfuzz_plugin_features): not attention variants, but what the
 * plugin's backward pass is. */
/* The plugin exports attnfuzz_plugin_supports_backward and attnfuzz_plugin_backward. */
#define ATTNFUZZ_FEATURE_BACKWARD 64u
/* Its dQ, dK or dV may differ in a bit from run to run on the same inputs (atomics, split
 * reductions): each run is then judged against the oracle on its own instead of being held to the
 * first run's bits, as fuzz_attention --allow-nondeterminism does for every kernel. */
#define ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD 128u

typedef struct attnfuzz_backward_problem {
  /* The forward's problem, every variant meaning what it means there; return_lse is 1: the
   * backward reads the forward's log-sum-exp (tensors->lse). */
  attnfuzz_problem_v2 forward;
  /* Each gradient's strides, and dO's: today dO's equal O's, dQ's Q's, dK's K's and dV's V's
   * (dK and dV have kv_heads heads); read them, do not assume it. */
  attnfuzz_strides grad_output_strides, dq_strides, dk_strides, dv_strides;
  /* 1 unless the run allows nondeterminism: a kernel with both an ordered and an atomic dQ
   * accumulation should take the ordered one (FlashAttention's `deterministic`). A request, never
   * a reason to decline: attnfuzz_plugin_supports_backward is always asked with 1, and a kernel
   * with only an atomic order runs it and declares ATTNFUZZ_FEATURE_NONDETERMINISTIC_BACKWARD. */
  int32_t deterministic;
} attnfuzz_backward_problem;

typedef struct attnfuzz_backward_tensors {
  const uint16_t* grad_output; /* dO, element [0, 0, 0, 0], laid out by grad_output_strides */
  /* The gradients to write, every element of every row; like O they start as a NaN poison pattern
   * fenced by guard margins (row padding included), so an element left unwritten or a write
   * outside the tensor is found. dK and dV sum over the query heads of their GQA group; with paged
   * K/V they are page pools addressed through block_table as K and V are, and a page no sequence
   * uses must stay untouched. */
  uint16_t* dq;
  uint16_t* dk;
  uint16_t* dv;
} attnfuzz_backward_tensors;

/* ---- version 4: fp8 inputs ---- */

/* Input dtypes of version 4 (attnfuzz_problem_v4's q_dtype, k_dtype, v_dtype): one byte per
 * element, OCP FP8. e4m3 is e4m3fn: bias 7, no infinity, NaN only at S.1111.111, largest 448;
 * e5m2: bias 15, IEEE-like infinities and NaNs, largest 57344. An output is never fp8. */
#define ATTNFUZZ_DTYPE_E4M3 2
#define ATTNFUZZ_DTYPE_E5M2 3

/* Feature bit: the plugin takes fp8 inputs (attnfuzz_problem_v4, attnfuzz_tensors_v4). For now a
 * host plugin's: a plugin on the CUDA device skips fp8 cases whatever it declares. */
#define ATTNFUZZ_FEATURE_FP8_INPUTS 256u

/* How an fp8 tensor's values are scaled back (attnfuzz_problem_v4's descale). */
#define ATTNFUZZ_DESCALE_NONE 0        /* each value is the pattern's */
#define ATTNFUZZ_DESCALE_PER_TENSOR 1  /* times one factor (every entry of the array the same) */
#define ATTNFUZZ_DESCALE_PER_KV_HEAD 2 /* times the factor of its (batch, KV head) */

typedef struct attnfuzz_problem_v4 {
  /* Version 2's fields, meaning what they meant; v2.base.dtype is the output's (fp16 or bf16) and
   * the dtype of every input not stored in fp8. */
  attnfuzz_problem_v2 v2;
  /* ATTNFUZZ_DTYPE_*: each input's storage, v2.base.dtype or ATTNFUZZ_DTYPE_E4M3 / _E5M2. An fp8
   * tensor's pointer in attnfuzz_tensors_v4 points at bytes (cast it to const uint8_t*), and its
   * strides count bytes: element (b, s, h, d) is byte b * batch + s * seq + h * head + d. */
  int32_t q_dtype, k_dtype, v_dtype;
  /* ATTNFUZZ_DESCALE_*: the descale factors of the fp8 tensors (none for a 16-bit one). The value
   * of element x of an fp8 tensor is decode(x) * factor, as FlashAttention 3's q_descale,
   * k_descale and v_descale: multiply the scores by Q's and K's factors and the output by V's. */
  int32_t descale;
} attnfuzz_problem_v4;

typedef struct attnfuzz_tensors_v4 {
  attnfuzz_tensors_v2 v2;
  /* [batch * kv_heads] factors, entry b * kv_heads + kv for sequence b and KV head kv (query head
   * h reads entry h / (heads / kv_heads)), in the plugin's memory site; NULL for a tensor that is
   * not descaled (a factor of 1). */
  const float* q_descale;
  const float* k_descale;
  const float* v_descale;
} attnfuzz_tensors_v4;

/* The five symbols a plugin exports. */

/* Must return ATTNFUZZ_PLUGIN_ABI_VERSION as the plugin saw it when it was compiled. */
int attnfuzz_plugin_abi_version(void);

/* The kernel's name in reports and replay commands: letters, digits, '_' and '-'. */
const char* attnfuzz_plugin_name(void);

/* ATTNFUZZ_SITE_HOST or ATTNFUZZ_SITE_CUDA_DEVICE. */
int attnfuzz_plugin_site(void);

/* 1 when the plugin can run `problem`; 0 when not, with a one-line reason written (NUL-terminated,
 * at most reason_size bytes) into `reason`. Such a case is skipped with that reason, never failed.
 */
int attnfuzz_plugin_supports(const attnfuzz_problem* problem, char* reason, size_t reason_size);

/* Computes O for `problem`. Returns ATTNFUZZ_STATUS_OK, or ATTNFUZZ_STATUS_ERROR with a one-line
 * message written into `error` (NUL-terminated, at most error_size bytes). A CUDA plugin may
 * return before its kernels finish on `tensors->cuda_stream`: the harness synchronises. */
int attnfuzz_plugin_forward(const attnfuzz_problem* problem, const attnfuzz_tensors* tensors,
                            char* error, size_t error_size);

/* Version 2, optional (all three or none): the features the plugin supports (ATTNFUZZ_FEATURE_*
 * bits), and supports/forward taking the version 2 problem and tensors. When exported, they are
 * called instead of attnfuzz_plugin_supports and attnfuzz_plugin_forward. A plugin built for
 * version 4 or later is handed an attnfuzz_problem_v4 and an attnfuzz_tensors_v4 through these
 * pointers. */
uint32_t attnfuzz_plugin_features(void);
int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size);
int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size);

/* Version 3, optional (both or neither; exported whenever attnfuzz_plugin_features() declares
 * ATTNFUZZ_FEATURE_BACKWARD, and never called without it: a bridge hosting functions of another
 * language may export them for all, declaring the bit for those with a backward): whether the
 * plugin's backward runs `problem` (1, or 0 with a reason: the case is then skipped), and the
 * backward pass itself. `tensors` holds the forward's inputs and
 * index arrays, O and the log-sum-exp of the forward (O rounded to the dtype, the log-sum-exp to
 * fp32, both from attnfuzz's float64 forward, as its backward bound assumes); none of them may be
 * written. Returns ATTNFUZZ_STATUS_OK, or ATTNFUZZ_STATUS_ERROR with a one-line message. */
int attnfuzz_plugin_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                      size_t reason_size);
int attnfuzz_plugin_backward(const attnfuzz_backward_problem* problem,
                             const attnfuzz_tensors_v2* tensors,
                             const attnfuzz_backward_tensors* gradients, char* error,
                             size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* ATTNFUZZ_PLUGIN_H */
