// SPDX-License-Identifier: BSD-3-Clause
#include "case/work_cap.h"

#include <utility>

#include <algorithm>

namespace attnfuzz {
namespace {

// Sequence lengths keep their position in a 64-row tile while they shrink.
constexpr std::int64_t kTileRows = 64;

// The largest value in [floor, value] whose work, `work_per_unit` a unit, is within `cap`; floor
// when none is.
std::int64_t largest_fitting(std::int64_t value, std::int64_t floor, std::int64_t work_per_unit,
                             std::int64_t cap) {
  return std::clamp(cap / work_per_unit, std::min(floor, value), value);
}

// The same for a sequence length, stepping down by whole tiles to its remainder modulo 64.
std::int64_t largest_fitting_length(std::int64_t length, std::int64_t work_per_unit,
                                    std::int64_t cap) {
  const std::int64_t remainder = (length - 1) % kTileRows + 1;
  const std::int64_t fitting = cap / work_per_unit;
  if (fitting >= length) return length;
  if (fitting <= remainder) return remainder;
  return remainder + (fitting - remainder) / kTileRows * kTileRows;
}

}  // namespace

std::int64_t case_work(const AttentionCase& attention_case) {
  const AttentionCase& c = attention_case;
  return c.batch * c.heads * c.seq_len_q * c.seq_len_k * c.head_dim;
}

AttentionCase fit_to_work_cap(AttentionCase attention_case, std::int64_t cap) {
  AttentionCase& c = attention_case;
  // Work without the given factor: what one unit of it costs.
  const auto per = [&c](std::int64_t factor) { return case_work(c) / factor; };
  const auto fits = [&c, cap] { return case_work(c) <= cap; };
  const auto shrink_heads = [&](std::int64_t floor) {
    std::int64_t group = c.heads / c.kv_heads;
    group = largest_fitting(group, floor, per(group), cap);
    c.heads = c.kv_heads * group;
    c.kv_heads = largest_fitting(c.kv_heads, floor, per(c.kv_heads), cap);
    c.heads = c.kv_heads * group;
  };

  if (fits()) return attention_case;
  c.batch = largest_fitting(c.batch, 1, per(c.batch), cap);
  if (!fits()) shrink_heads(2);
  if (!fits()) c.seq_len_q = largest_fitting_length(c.seq_len_q, per(c.seq_len_q), cap);
  if (!fits()) shrink_heads(1);
  if (!fits()) c.seq_len_q = largest_fitting(c.seq_len_q, 1, per(c.seq_len_q), cap);
  if (!fits()) c.seq_len_k = largest_fitting_length(c.seq_len_k, per(c.seq_len_k), cap);
  if (!fits()) c.seq_len_k = largest_fitting(c.seq_len_k, 1, per(c.seq_len_k), cap);
  // Per-sequence lengths follow: one per sequence kept, none longer than the new maximum.
  for (auto [lengths, longest] :
       {std::pair{&c.seq_lens_q, c.seq_len_q}, std::pair{&c.seq_lens_k, c.seq_len_k}}) {
    if (lengths->empty()) continue;
    lengths->resize(static_cast<std::size_t>(c.batch));
    for (std::int64_t& length : *lengths) length = std::min(length, longest);
  }
  return attention_case;
}

}  // namespace attnfuzz
