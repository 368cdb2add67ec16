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

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"

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

struct AttentionProblem {
  std::int64_t batch = 1;
  std::int64_t heads = 1;     // query heads
  std::int64_t kv_heads = 1;  // key/value heads; heads % kv_heads == 0
  std::int64_t seq_len_q = 1;
  std::int64_t seq_len_k = 1;
  std::int64_t head_dim = 64;
  Dtype dtype = Dtype::fp16;
  bool causal = false;
  double softmax_scale = 0.125;  // 1/sqrt(head_dim) unless chosen otherwise

  TensorStrides q_strides, k_strides, v_strides, o_strides;

  std::int64_t group_size() const { return heads / kv_heads; }
  // Last key index query row `query_row` may see, or -1 when the row is fully masked.
  std::int64_t last_visible_key(std::int64_t query_row) const {
    if (!causal) return seq_len_k - 1;
    const std::int64_t last = query_row + seq_len_k - seq_len_q;
    return last < seq_len_k - 1 ? (last < -1 ? -1 : last) : seq_len_k - 1;
  }
};

// Pointers to element [0, 0, 0, 0] of each tensor, laid out by the problem's strides, in the memory
// of whoever computes. Elements are raw fp16/bf16 patterns. The oracle reads only q, k and v.
struct AttentionTensors {
  const std::uint16_t* q = nullptr;
  const std::uint16_t* k = nullptr;
  const std::uint16_t* v = nullptr;
  std::uint16_t* o = nullptr;
};

// Strides of a tensor with `seq_len` rows of `heads` heads in `layout`, each head row padded by
// `row_padding` unused elements (padded strides, as a kernel sees from a sliced larger buffer).
TensorStrides make_strides(Layout layout, std::int64_t seq_len, std::int64_t heads,
                           std::int64_t head_dim, std::int64_t row_padding);

// Elements a tensor's buffer spans: one past its last element.
std::int64_t span_elements(const TensorStrides& strides, std::int64_t batch, std::int64_t seq_len,
                           std::int64_t heads, std::int64_t head_dim);

// Fills in the strides of all four tensors and the default scale; returns the problem.
AttentionProblem with_layout(AttentionProblem problem, Layout layout, std::int64_t row_padding);

// The problem's shape in one line, e.g. "B=2 H=6/2 Sq=113 Sk=203 D=128 bf16 causal".
std::string describe_shape(const AttentionProblem& problem);

// Multiply-adds of the two matrix products: 4 * B * H * Sq * Sk * D floating-point operations.
double attention_flops(const AttentionProblem& problem);

}  // namespace attnfuzz
