// SPDX-License-Identifier: BSD-3-Clause
// One attention forward problem: every shape, stride and numerics choice a kernel, the oracle and
// the harness need, in one plain struct (as flash-attention's Flash_fwd_params).
//
//   O[b, i, h, :] = sum_j softmax_j(scale * Q[b, i, h, :] . K[b, j, h / group, :]) * V[b, j, h /
//   group, :]
//
// where group = heads / kv_heads (GQA; MQA when kv_heads == 1) and, when causal, query i sees key j
// only if j <= i + seq_len_k - seq_len_q (bottom-right aligned, as FlashAttention). A query row
// that sees no key at all produces 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/fp8_inputs.h"

#if defined(__CUDACC__)
#define ATTNFUZZ_PROBLEM_HD __host__ __device__
#else
#define ATTNFUZZ_PROBLEM_HD
#endif

namespace attnfuzz {

// Element strides of one 4-D tensor; the head_dim stride is always 1.
struct TensorStrides {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t head = 0;
};

// How tensors are laid out in memory. BSHD is FlashAttention's native layout.
enum class Layout : std::uint8_t { bshd, bhsd };
inline constexpr std::string_view kLayoutNames[] = {"bshd", "bhsd"};
inline std::string_view layout_name(Layout layout) {
  return kLayoutNames[static_cast<int>(layout)];
}
std::optional<Layout> parse_layout(std::string_view name);

// How the four tensors are placed relative to one another, as callers hand them to kernels: each
// its own strides, not one layout for all. With a row of head_dim + row_padding elements and L
// the case's layout (L' the other one):
// X(id, name, what it is)
#define ATTNFUZZ_PLACEMENTS(X)                                                                     \
  X(shared, "shared", "O has Q's strides, V has K's: every tensor in L with the case's padding")   \
  X(o_contiguous, "o_contiguous",                                                                  \
    "O freshly allocated: bshd without padding, whatever Q's layout and padding")                  \
  X(o_slice, "o_slice", "O written into a slice of a larger buffer: H of H + 3 heads, in L")       \
  X(v_other_layout, "v_other_layout", "V in L' while K is in L (a transposed V cache)")            \
  X(qkv_packed, "qkv_packed",                                                                      \
    "Q, K, V views into one fused projection of H + 2 Hkv heads a row, in L (qkvpacked)")          \
  X(kv_packed, "kv_packed", "K and V views into one tensor of 2 Hkv heads a row, in L (kvpacked)") \
  X(kv_cache, "kv_cache", "K and V a cache of its own: L' with 8 more elements of padding a row")

enum class Placement : std::uint8_t {
#define ATTNFUZZ_PLACEMENT_ENUM(id, name, what) id,
  ATTNFUZZ_PLACEMENTS(ATTNFUZZ_PLACEMENT_ENUM)
#undef ATTNFUZZ_PLACEMENT_ENUM
};
struct PlacementInfo {
  Placement placement;
  std::string_view name;
  std::string_view what;
};
inline constexpr PlacementInfo kPlacements[] = {
#define ATTNFUZZ_PLACEMENT_ROW(id, name, what) {Placement::id, name, what},
    ATTNFUZZ_PLACEMENTS(ATTNFUZZ_PLACEMENT_ROW)
#undef ATTNFUZZ_PLACEMENT_ROW
};
inline std::string_view placement_name(Placement placement) {
  return kPlacements[static_cast<int>(placement)].name;
}
std::optional<Placement> parse_placement(std::string_view name);

// How wide a placement makes the buffers its tensors are views of, for the limits checked before
// any stride is: the heads of a row of Q's or O's buffer (the wider of the two), of K's or V's, and
// the elements a K or V row holds beyond head_dim + row_padding. Nothing when a sum overflows.
struct PlacementBounds {
  std::int64_t query_heads = 0;
  std::int64_t key_heads = 0;
  std::int64_t key_extra_padding = 0;
};
std::optional<PlacementBounds> placement_bounds(Placement placement, std::int64_t heads,
                                                std::int64_t kv_heads);

// The keys a query row sees: [first, end); none when end <= first.
struct KeyRange {
  std::int64_t first = 0;
  std::int64_t end = 0;
  ATTNFUZZ_PROBLEM_HD bool empty() const { return end <= first; }
};

// Everything about a problem that is one number: what a kernel launch copies by value (device code
// included). The index arrays that the variants need live in AttentionProblem below; kernels read
// them through AttentionTensors, in their own memory.
struct ProblemShape {
  std::int64_t batch = 1;
  std::int64_t heads = 1;      // query heads
  std::int64_t kv_heads = 1;   // key/value heads; heads % kv_heads == 0
  std::int64_t seq_len_q = 1;  // the longest query sequence (FlashAttention's max_seqlen_q)
  std::int64_t seq_len_k = 1;  // the longest key sequence (max_seqlen_k)
  std::int64_t head_dim = 64;
  Dtype dtype = Dtype::fp16;
  bool causal = false;
  double softmax_scale = 0.125;  // 1/sqrt(head_dim) unless chosen otherwise

  TensorStrides q_strides, k_strides, v_strides, o_strides;

  // ---- the variants, FlashAttention's definitions; each is off by default ----
  // Sliding window: query i of a sequence sees key j only if
  //   i + Sk - Sq - window_left <= j <= i + Sk - Sq + window_right   (Sq, Sk: that sequence's)
  // -1 leaves a side unbounded. Causal caps window_right at 0.
  std::int64_t window_left = -1;
  std::int64_t window_right = -1;
  // > 0: each scaled score s becomes softcap * tanh(s / softcap) (Gemma 2's logit soft-capping).
  double softcap = 0.0;
  // ALiBi: score(i, j) += -alibi_slopes[h] * |i + Sk - Sq - j|, added after soft-capping.
  bool alibi = false;
  // The kernel also writes the log-sum-exp of each query row's scores: fp32, natural log, -inf
  // (or +inf, FlashAttention 2's convention) for a row that sees no key.
  bool return_lse = false;
  // Varlen: Q and O are packed, sequence b's query rows starting at row cu_seqlens_q[b] of a
  // tensor of total_q rows (their batch stride is 0, unused).
  bool varlen_q = false;
  std::int64_t total_q = 0;
  // Per-sequence key lengths (cu_seqlens_k). Without paging K and V are packed by them as Q is by
  // cu_seqlens_q; with paging they only say how many of its pages' rows a sequence uses.
  bool varlen_k = false;
  std::int64_t total_k = 0;
  // Paged K/V (page_size > 0): K and V are a pool of `pages` pages of page_size rows
  // (k_strides.batch steps from page to page); key j of sequence b is row j % page_size of page
  // block_table[b * pages_per_sequence + j / page_size].
  std::int64_t page_size = 0;
  std::int64_t pages = 0;
  std::int64_t pages_per_sequence = 0;
  // The log-sum-exp output: row (b, i) of head h at lse_row_offset(b, i) + h * lse_strides.head;
  // [batch][heads][seq_len_q] dense, [heads][total_q] varlen (FlashAttention's softmax_lse).
  TensorStrides lse_strides;
  // fp8 inputs (core/fp8_inputs.h): how each of Q, K, V is stored (`dtype`, the outputs', unless
  // an fp8 format), and how the fp8 ones are descaled. Their factors are data, in the tensors.
  InputStorage q_storage = InputStorage::same;
  InputStorage k_storage = InputStorage::same;
  InputStorage v_storage = InputStorage::same;
  Descale descale = Descale::none;

  ATTNFUZZ_PROBLEM_HD std::int64_t group_size() const { return heads / kv_heads; }
  ATTNFUZZ_PROBLEM_HD Dtype q_dtype() const { return storage_dtype(q_storage, dtype); }
  ATTNFUZZ_PROBLEM_HD Dtype k_dtype() const { return storage_dtype(k_storage, dtype); }
  ATTNFUZZ_PROBLEM_HD Dtype v_dtype() const { return storage_dtype(v_storage, dtype); }
  ATTNFUZZ_PROBLEM_HD bool fp8_inputs() const {
    return q_storage != InputStorage::same || k_storage != InputStorage::same ||
           v_storage != InputStorage::same;
  }
  // Whether the tensor stored as `storage` comes with descale factors.
  ATTNFUZZ_PROBLEM_HD bool descaled(InputStorage storage) const {
    return descale != Descale::none && storage != InputStorage::same;
  }
  ATTNFUZZ_PROBLEM_HD bool paged() const { return page_size > 0; }
};

// ---- addressing and masking, for host and device code alike ----
// The index arrays are passed in, from wherever the caller keeps them (a kernel's memory).

// Rows of sequence b: its own length when varlen, the problem's otherwise.
ATTNFUZZ_PROBLEM_HD inline std::int64_t sequence_length(bool varlen, std::int64_t fixed,
                                                        const std::int32_t* cu_seqlens,
                                                        std::int64_t b) {
  return varlen ? cu_seqlens[b + 1] - cu_seqlens[b] : fixed;
}

// Offset of element [b, i, 0, 0] of Q or O (strides q_strides or o_strides).
ATTNFUZZ_PROBLEM_HD inline std::int64_t query_row_offset(const ProblemShape& problem,
                                                         const TensorStrides& strides,
                                                         const std::int32_t* cu_seqlens_q,
                                                         std::int64_t b, std::int64_t i) {
  return problem.varlen_q ? (cu_seqlens_q[b] + i) * strides.seq
                          : b * strides.batch + i * strides.seq;
}

// Offset of element [b, j, 0, 0] of K or V: through the block table when paged.
ATTNFUZZ_PROBLEM_HD inline std::int64_t key_row_offset(const ProblemShape& problem,
                                                       const TensorStrides& strides,
                                                       const std::int32_t* cu_seqlens_k,
                                                       const std::int32_t* block_table,
                                                       std::int64_t b, std::int64_t j) {
  if (problem.paged()) {
    const std::int64_t page = block_table[b * problem.pages_per_sequence + j / problem.page_size];
    return page * strides.batch + (j % problem.page_size) * strides.seq;
  }
  return problem.varlen_k ? (cu_seqlens_k[b] + j) * strides.seq
                          : b * strides.batch + j * strides.seq;
}

// Offset of the log-sum-exp of row (b, i), head 0.
ATTNFUZZ_PROBLEM_HD inline std::int64_t lse_row_offset(const ProblemShape& problem,
                                                       const std::int32_t* cu_seqlens_q,
                                                       std::int64_t b, std::int64_t i) {
  return problem.varlen_q ? cu_seqlens_q[b] + i : b * problem.lse_strides.batch + i;
}

// Pages of `page_size` rows that `seq_len_k` keys fill, the last one perhaps partly: a ceiling
// that no page size, however large, overflows.
inline std::int64_t pages_for(std::int64_t seq_len_k, std::int64_t page_size) {
  return seq_len_k <= 0 ? 0 : 1 + (seq_len_k - 1) / page_size;
}

// The keys before key_end that a query row whose diagonal is key `diagonal` sees: up to the
// diagonal when causal, within window_right keys after it and window_left keys before it (-1: no
// limit). The oracle reads it through visible_keys, and the FlashAttention twins through
// kernels/flash_plant_rules.h, which adds only their plants' slack; cuda_naive, a second kernel
// written apart from them, keeps its own causal bound.
ATTNFUZZ_PROBLEM_HD inline KeyRange keys_about_diagonal(std::int64_t diagonal, bool causal,
                                                        std::int64_t window_left,
                                                        std::int64_t window_right,
                                                        std::int64_t key_end) {
  // Written so that no window, however wide, overflows: a window is added to or taken from the
  // diagonal only when it is narrower than the distance it is compared with.
  KeyRange range{0, key_end};
  if (causal && diagonal + 1 < range.end) range.end = diagonal + 1;
  if (window_right >= 0 && window_right < range.end - 1 - diagonal) {
    range.end = diagonal + window_right + 1;
  }
  if (window_left >= 0 && window_left < diagonal) range.first = diagonal - window_left;
  return range;
}

// The keys query row i of a sequence of seq_q queries and seq_k keys sees: the causal mask
// (bottom-right aligned) and the sliding window about the diagonal i + seq_k - seq_q.
ATTNFUZZ_PROBLEM_HD inline KeyRange visible_keys(const ProblemShape& problem, std::int64_t i,
                                                 std::int64_t seq_q, std::int64_t seq_k) {
  return keys_about_diagonal(i + seq_k - seq_q, problem.causal, problem.window_left,
                             problem.window_right, seq_k);
}

// |i + seq_k - seq_q - j|: ALiBi's distance of key j from row i's diagonal.
ATTNFUZZ_PROBLEM_HD inline std::int64_t alibi_distance(std::int64_t i, std::int64_t j,
                                                       std::int64_t seq_q, std::int64_t seq_k) {
  const std::int64_t distance = i + seq_k - seq_q - j;
  return distance < 0 ? -distance : distance;
}

// Entries after a paged problem's block table, each naming the pool's spare page: a kernel that
// reads past a sequence's last page (up to a key tile of 256 keys in pages of one row) reads
// poison, which the comparison catches, instead of whatever lies past the array.
inline constexpr std::size_t kBlockTableGuardEntries = 256;

// The problem and the index arrays its variants need (host memory; empty when unused).
struct AttentionProblem : ProblemShape {
  // Per-sequence lengths (varlen); empty: every sequence has seq_len_q (seq_len_k) rows.
  std::vector<std::int64_t> seq_lens_q, seq_lens_k;
  std::vector<std::int32_t> cu_seqlens_q, cu_seqlens_k;  // [batch + 1] prefix sums when varlen
  // [batch][pages_per_sequence] when paged, then kBlockTableGuardEntries naming the spare page.
  std::vector<std::int32_t> block_table;
  std::vector<float> alibi_slopes;  // [heads] when alibi

  std::int64_t seq_len_q_of(std::int64_t b) const {
    return sequence_length(varlen_q, seq_len_q, cu_seqlens_q.data(), b);
  }
  std::int64_t seq_len_k_of(std::int64_t b) const {
    return sequence_length(varlen_k, seq_len_k, cu_seqlens_k.data(), b);
  }
  std::int64_t q_row_offset(std::int64_t b, std::int64_t i) const {
    return query_row_offset(*this, q_strides, cu_seqlens_q.data(), b, i);
  }
  std::int64_t o_row_offset(std::int64_t b, std::int64_t i) const {
    return query_row_offset(*this, o_strides, cu_seqlens_q.data(), b, i);
  }
  std::int64_t k_row_offset(std::int64_t b, std::int64_t j) const {
    return key_row_offset(*this, k_strides, cu_seqlens_k.data(), block_table.data(), b, j);
  }
  std::int64_t v_row_offset(std::int64_t b, std::int64_t j) const {
    return key_row_offset(*this, v_strides, cu_seqlens_k.data(), block_table.data(), b, j);
  }
  std::int64_t lse_offset(std::int64_t b, std::int64_t i, std::int64_t h) const {
    return lse_row_offset(*this, cu_seqlens_q.data(), b, i) + h * lse_strides.head;
  }
  // The keys row i of sequence b sees.
  KeyRange visible_keys_of(std::int64_t b, std::int64_t i) const {
    return visible_keys(*this, i, seq_len_q_of(b), seq_len_k_of(b));
  }
  // What ALiBi adds to score (b, h, i, j) (0 without ALiBi), in double from the fp32 slope.
  double score_bias(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const {
    if (!alibi) return 0.0;
    return -static_cast<double>(alibi_slopes[static_cast<std::size_t>(h)]) *
           static_cast<double>(alibi_distance(i, j, seq_len_q_of(b), seq_len_k_of(b)));
  }
  // The largest |ALiBi bias| over the keys row i of sequence b sees (0 without ALiBi).
  double largest_bias(std::int64_t b, std::int64_t h, std::int64_t i) const;
  // Rows of the output, over every sequence: batch * seq_len_q, or total_q when varlen.
  std::int64_t query_rows() const { return varlen_q ? total_q : batch * seq_len_q; }
};

// Pointers to element [0, 0, 0, 0] of each tensor, laid out by the problem's strides, in the memory
// of whoever computes. Elements are raw patterns of each tensor's dtype (an fp8 pattern in the low
// byte). The oracle reads only q, k, v and their descale factors.
struct AttentionTensors {
  const std::uint16_t* q = nullptr;
  const std::uint16_t* k = nullptr;
  const std::uint16_t* v = nullptr;
  std::uint16_t* o = nullptr;
  // The variants' index arrays and outputs, null when unused (AttentionProblem's, in this memory).
  const std::int32_t* cu_seqlens_q = nullptr;
  const std::int32_t* cu_seqlens_k = nullptr;
  const std::int32_t* block_table = nullptr;
  const float* alibi_slopes = nullptr;
  float* lse = nullptr;  // [lse_span(problem)] when the problem returns the log-sum-exp
  // [batch][kv_heads] descale factors of each fp8 tensor that has them (problem.descaled), null
  // otherwise (a factor of 1): descale_at(tensors.k_descale, kv_heads, b, kv_head).
  const float* q_descale = nullptr;
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  // Elements each input's buffer holds from its pointer, guard tail included (0: not known): what
  // a kernel that hands an input on in another form (a plugin's byte-packed fp8 copy) copies.
  std::size_t q_elements = 0, k_elements = 0, v_elements = 0;
};

// The backward pass's own tensors, beside an AttentionTensors whose q, k, v, the forward's o and
// lse (natural log, as the forward wrote them) and index arrays it reads: dO laid out as O, dQ as
// Q, dK as K and dV as V.
struct BackwardTensors {
  const std::uint16_t* grad_output = nullptr;
  std::uint16_t* dq = nullptr;
  std::uint16_t* dk = nullptr;
  std::uint16_t* dv = nullptr;
  // Not a tensor but how they are to be written: false when the run allows nondeterminism, so a
  // kernel with an ordered and an atomic dQ may take the atomic one (FlashAttention's
  // `deterministic`).
  bool deterministic = true;
};

// `tensors` with the problem's own (host) index arrays.
AttentionTensors with_index_arrays(AttentionTensors tensors, const AttentionProblem& problem);

// Strides of a tensor with `seq_len` rows of `heads` heads in `layout`, each head row padded by
// `row_padding` unused elements (padded strides, as a kernel sees from a sliced larger buffer).
// `heads` counts the heads of the buffer the tensor is a view of: a packed tensor's heads are
// some of them.
TensorStrides make_strides(Layout layout, std::int64_t seq_len, std::int64_t heads,
                           std::int64_t head_dim, std::int64_t row_padding);

// Elements a tensor's buffer spans: one past its last element.
std::int64_t span_elements(const TensorStrides& strides, std::int64_t batch, std::int64_t seq_len,
                           std::int64_t heads, std::int64_t head_dim);

// Fills in the strides of all four tensors (as `placement` places them; packed for varlen, pages
// for paged K/V) and of the log-sum-exp, and the index arrays the variants need: cu_seqlens from
// seq_lens_q/k, the block table (a shuffle of the page pool, fixed by the shape) and the ALiBi
// slopes; returns the problem.
AttentionProblem with_layout(AttentionProblem problem, Layout layout, std::int64_t row_padding,
                             Placement placement = Placement::shared);

// Elements the Q, K, V and O buffers and floats the log-sum-exp buffer span (one past the last).
std::int64_t q_span(const AttentionProblem& problem);
std::int64_t k_span(const AttentionProblem& problem);
std::int64_t v_span(const AttentionProblem& problem);
std::int64_t o_span(const AttentionProblem& problem);
std::int64_t lse_span(const AttentionProblem& problem);

// The guard margins the harness leaves around the outputs, in elements: kOutputGuardElements
// before O and on each side of the log-sum-exp (a few full rows, at least one 128-byte line); after
// O, that and room for the writes of a kernel that misplaces O by a whole sequence (a varlen row
// offset) or by wider strides than O's (Q's, in a packed QKV buffer), so that such a write is found
// and named, never past the fence.
inline constexpr std::int64_t kOutputGuardElements = 1024;
std::int64_t output_trailing_guard_elements(const AttentionProblem& problem);

// ALiBi's slopes for `heads` heads: 2^(-8 (h + 1) / heads), the paper's geometric sequence.
std::vector<float> alibi_slopes_for(std::int64_t heads);

// The problem's shape in one line, e.g. "B=2 H=6/2 Sq=113 Sk=203 D=128 bf16 causal".
std::string describe_shape(const AttentionProblem& problem);

// Multiply-adds of the two matrix products: 4 * B * H * Sq * Sk * D floating-point operations.
double attention_flops(const AttentionProblem& problem);

}  // namespace attnfuzz
