// SPDX-License-Identifier: BSD-3-Clause
#include "case/work_cap.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

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

// `product` times every factor, or INT64_MAX once a product leaves int64: a case from a worker
// request, a generator or version 3 of the binary form (2^20 batches of 2^20 query rows) need not
// have passed the matrix reader's checked products.
std::int64_t saturating_product(std::int64_t product, std::initializer_list<std::int64_t> factors) {
  for (const std::int64_t factor : factors) {
    if (__builtin_mul_overflow(product, factor, &product)) return INT64_MAX;
  }
  return product;
}

}  // namespace

std::int64_t case_work(const AttentionCase& attention_case) {
  return saturating_product(1,
                            {attention_case.batch, attention_case.heads, attention_case.seq_len_q,
                             attention_case.seq_len_k, attention_case.head_dim});
}

std::int64_t page_pool_elements(const AttentionCase& attention_case) {
  if (attention_case.page_size <= 0) return 0;
  std::int64_t elements = saturating_product(
      1, {pages_for(attention_case.seq_len_k, attention_case.page_size), attention_case.batch});
  if (__builtin_add_overflow(elements, 1, &elements)) return INT64_MAX;  // the spare page
  // K's buffer, whose rows a packed placement widens (core/attention_problem.h).
  const std::optional<PlacementBounds> bounds =
      placement_bounds(attention_case.placement, attention_case.heads, attention_case.kv_heads);
  if (!bounds) return INT64_MAX;
  return saturating_product(elements,
                            {attention_case.page_size, bounds->key_heads, attention_case.head_dim});
}

namespace {

// Steps 1 to 5 of fit_to_work_cap: the work.
AttentionCase fit_work(AttentionCase attention_case, std::int64_t cap) {
  // Work without the given factor: what one unit of it costs.
  const auto per = [&attention_case](std::int64_t factor) {
    return case_work(attention_case) / factor;
  };
  const auto fits = [&attention_case, cap] { return case_work(attention_case) <= cap; };
  const auto shrink_heads = [&](std::int64_t floor) {
    std::int64_t group = attention_case.heads / attention_case.kv_heads;
    group = largest_fitting(group, floor, per(group), cap);
    attention_case.heads = attention_case.kv_heads * group;
    attention_case.kv_heads =
        largest_fitting(attention_case.kv_heads, floor, per(attention_case.kv_heads), cap);
    attention_case.heads = attention_case.kv_heads * group;
  };

  if (fits()) return attention_case;
  attention_case.batch = largest_fitting(attention_case.batch, 1, per(attention_case.batch), cap);
  if (!fits()) shrink_heads(2);
  if (!fits())
    attention_case.seq_len_q =
        largest_fitting_length(attention_case.seq_len_q, per(attention_case.seq_len_q), cap);
  if (!fits()) shrink_heads(1);
  if (!fits())
    attention_case.seq_len_q =
        largest_fitting(attention_case.seq_len_q, 1, per(attention_case.seq_len_q), cap);
  if (!fits())
    attention_case.seq_len_k =
        largest_fitting_length(attention_case.seq_len_k, per(attention_case.seq_len_k), cap);
  if (!fits())
    attention_case.seq_len_k =
        largest_fitting(attention_case.seq_len_k, 1, per(attention_case.seq_len_k), cap);
  // Per-sequence lengths follow: one per sequence kept, none longer than the new maximum.
  for (auto [lengths, longest] :
       {std::pair{&attention_case.seq_lens_q, attention_case.seq_len_q},
        std::pair{&attention_case.seq_lens_k, attention_case.seq_len_k}}) {
    if (lengths->empty()) continue;
    lengths->resize(static_cast<std::size_t>(attention_case.batch));
    for (std::int64_t& length : *lengths) length = std::min(length, longest);
  }
  return attention_case;
}

}  // namespace

AttentionCase fit_to_work_cap(AttentionCase attention_case, std::int64_t cap) {
  attention_case = fit_work(std::move(attention_case), cap);
  while (page_pool_elements(attention_case) > cap && attention_case.page_size > 1) {
    attention_case.page_size /= 2;
  }
  // Pages of one row hold one row per key and a spare one: when even that is over the cap (work
  // close to the cap), the keys give way too, to work of at most the cap less the spare row, which
  // bounds the pool of one-row pages (batch x seq_len_k <= work / (kv_heads x head_dim)).
  if (page_pool_elements(attention_case) > cap) {
    const std::int64_t spare_row = attention_case.kv_heads * attention_case.head_dim;
    attention_case = fit_work(std::move(attention_case), std::max(cap - spare_row, spare_row));
  }
  // A packed placement widens each pooled row past kv_heads x head_dim (K's rows hold the query
  // heads too under qkv_packed): the work halves until the pool fits.
  for (std::int64_t work = case_work(attention_case) / 2;
       page_pool_elements(attention_case) > cap && work >= 1; work /= 2) {
    attention_case = fit_work(std::move(attention_case), work);
  }
  return attention_case;
}

}  // namespace attnfuzz
