// SPDX-License-Identifier: BSD-3-Clause
#include "core/attention_problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/splitmix.h"

namespace attnfuzz {

std::optional<Layout> parse_layout(std::string_view name) {
  for (int index = 0; index < static_cast<int>(std::size(kLayoutNames)); ++index) {
    if (kLayoutNames[index] == name) return static_cast<Layout>(index);
  }
  return std::nullopt;
}

std::optional<Placement> parse_placement(std::string_view name) {
  for (const PlacementInfo& info : kPlacements) {
    if (info.name == name) return info.placement;
  }
  return std::nullopt;
}

TensorStrides make_strides(Layout layout, std::int64_t seq_len, std::int64_t heads,
                           std::int64_t head_dim, std::int64_t row_padding) {
  const std::int64_t row = head_dim + row_padding;
  if (layout == Layout::bshd) return {seq_len * heads * row, heads * row, row};
  return {heads * seq_len * row, row, seq_len * row};
}

std::int64_t span_elements(const TensorStrides& strides, std::int64_t batch, std::int64_t seq_len,
                           std::int64_t heads, std::int64_t head_dim) {
  return (batch - 1) * strides.batch + (seq_len - 1) * strides.seq + (heads - 1) * strides.head +
         head_dim;
}

namespace {

// Prefix sums of per-sequence lengths: cu[0] = 0, cu[b + 1] = cu[b] + lengths[b].
std::vector<std::int32_t> prefix_sums(const std::vector<std::int64_t>& lengths) {
  std::vector<std::int32_t> sums(lengths.size() + 1, 0);
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    sums[b + 1] = static_cast<std::int32_t>(sums[b] + lengths[b]);
  }
  return sums;
}

// The pages of the pool in an order fixed by the shape: a Fisher-Yates shuffle keyed by it, so
// that no sequence's logical page p is pool page b * pages_per_sequence + p.
std::vector<std::int32_t> shuffled_pages(std::int64_t pages, std::uint64_t key) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(pages));
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t last = pages - 1; last > 0; --last) {
    const std::uint64_t draw =
        splitmix64_step(key ^ splitmix64_step(static_cast<std::uint64_t>(last)));
    std::swap(order[static_cast<std::size_t>(last)],
              order[static_cast<std::size_t>(draw % static_cast<std::uint64_t>(last + 1))]);
  }
  return order;
}

// Elements a tensor of `rows` rows per batch entry spans; 0 when it has no rows.
std::int64_t rows_span(const TensorStrides& strides, std::int64_t batch, std::int64_t rows,
                       std::int64_t heads, std::int64_t head_dim) {
  if (batch == 0 || rows == 0) return 0;
  return span_elements(strides, batch, rows, heads, head_dim);
}

// Where one tensor lies: its layout, its row padding and the heads of the buffer it is a view of.
struct TensorPlace {
  Layout layout;
  std::int64_t row_padding;
  std::int64_t buffer_heads;
};

struct TensorPlaces {
  TensorPlace q, k, v, o;
};

Layout other_layout(Layout layout) {
  return layout == Layout::bshd ? Layout::bhsd : Layout::bshd;
}

// Each tensor's place under `placement` (core/attention_problem.h's table says what each is);
// nothing when a buffer's heads or padding overflow int64.
std::optional<TensorPlaces> places_of(Placement placement, Layout layout, std::int64_t row_padding,
                                      std::int64_t heads, std::int64_t kv_heads) {
  const TensorPlace query{layout, row_padding, heads};
  const TensorPlace key{layout, row_padding, kv_heads};
  TensorPlaces places{query, key, key, query};
  std::int64_t wider = 0;
  switch (placement) {
    case Placement::shared:
      break;
    case Placement::o_contiguous:
      places.o = {Layout::bshd, 0, heads};
      break;
    case Placement::o_slice:
      if (__builtin_add_overflow(heads, 3, &wider)) return std::nullopt;
      places.o.buffer_heads = wider;
      break;
    case Placement::v_other_layout:
      places.v.layout = other_layout(layout);
      break;
    case Placement::qkv_packed:
      if (__builtin_mul_overflow(kv_heads, 2, &wider) ||
          __builtin_add_overflow(wider, heads, &wider)) {
        return std::nullopt;
      }
      places.q.buffer_heads = places.k.buffer_heads = places.v.buffer_heads = wider;
      break;
    case Placement::kv_packed:
      if (__builtin_mul_overflow(kv_heads, 2, &wider)) return std::nullopt;
      places.k.buffer_heads = places.v.buffer_heads = wider;
      break;
    case Placement::kv_cache:
      if (__builtin_add_overflow(row_padding, 8, &wider)) return std::nullopt;
      places.k = places.v = {other_layout(layout), wider, kv_heads};
      break;
  }
  return places;
}

// Strides of a tensor of `rows` rows (per batch entry, or in all when `packed`: its batch stride
// is then 0) at `place`.
TensorStrides strides_at(const TensorPlace& place, std::int64_t rows, bool packed,
                         std::int64_t head_dim) {
  TensorStrides strides =
      make_strides(place.layout, rows, place.buffer_heads, head_dim, place.row_padding);
  if (packed) strides.batch = 0;
  return strides;
}

}  // namespace

std::optional<PlacementBounds> placement_bounds(Placement placement, std::int64_t heads,
                                                std::int64_t kv_heads) {
  const std::optional<TensorPlaces> places = places_of(placement, Layout::bshd, 0, heads, kv_heads);
  if (!places) return std::nullopt;
  return PlacementBounds{std::max(places->q.buffer_heads, places->o.buffer_heads),
                         std::max(places->k.buffer_heads, places->v.buffer_heads),
                         std::max(places->k.row_padding, places->v.row_padding)};
}

AttentionProblem with_layout(AttentionProblem problem, Layout layout, std::int64_t row_padding,
                             Placement placement) {
  const std::int64_t dim = problem.head_dim;
  // The reader's checks (placement_bounds) keep a case's buffers within int64; past them,
  // value() throws rather than place a tensor anywhere.
  const TensorPlaces places =
      places_of(placement, layout, row_padding, problem.heads, problem.kv_heads).value();
  problem.varlen_q = !problem.seq_lens_q.empty();
  problem.varlen_k = !problem.seq_lens_k.empty();
  problem.cu_seqlens_q =
      problem.varlen_q ? prefix_sums(problem.seq_lens_q) : std::vector<std::int32_t>{};
  problem.cu_seqlens_k =
      problem.varlen_k ? prefix_sums(problem.seq_lens_k) : std::vector<std::int32_t>{};
  problem.total_q = problem.varlen_q ? problem.cu_seqlens_q.back() : 0;
  problem.total_k = problem.varlen_k ? problem.cu_seqlens_k.back() : 0;

  const std::int64_t query_rows = problem.varlen_q ? problem.total_q : problem.seq_len_q;
  problem.q_strides = strides_at(places.q, query_rows, problem.varlen_q, dim);
  problem.o_strides = strides_at(places.o, query_rows, problem.varlen_q, dim);

  if (problem.paged()) {
    problem.pages_per_sequence = pages_for(problem.seq_len_k, problem.page_size);
    problem.pages = problem.batch * problem.pages_per_sequence + 1;  // one page no sequence uses
    problem.block_table = shuffled_pages(
        problem.pages, splitmix64_step(static_cast<std::uint64_t>(problem.batch) * 0x10001u ^
                                       static_cast<std::uint64_t>(problem.page_size) << 20 ^
                                       static_cast<std::uint64_t>(problem.seq_len_k)));
    // The spare page (the one no sequence uses) is the shuffled list's last entry: it also fills
    // the guard entries after the table, so that a kernel indexing past a sequence's pages reads
    // poison rather than past the array.
    const std::int32_t spare_page = problem.block_table.back();
    problem.block_table.resize(
        static_cast<std::size_t>(problem.batch * problem.pages_per_sequence));
    problem.block_table.resize(problem.block_table.size() + kBlockTableGuardEntries, spare_page);
    problem.k_strides = strides_at(places.k, problem.page_size, false, dim);
    problem.v_strides = strides_at(places.v, problem.page_size, false, dim);
  } else {
    problem.pages = problem.pages_per_sequence = 0;
    problem.block_table.clear();
    const std::int64_t key_rows = problem.varlen_k ? problem.total_k : problem.seq_len_k;
    problem.k_strides = strides_at(places.k, key_rows, problem.varlen_k, dim);
    problem.v_strides = strides_at(places.v, key_rows, problem.varlen_k, dim);
  }

  problem.lse_strides =
      problem.varlen_q ? TensorStrides{0, 1, problem.total_q}
                       : TensorStrides{problem.heads * problem.seq_len_q, 1, problem.seq_len_q};
  problem.alibi_slopes = problem.alibi ? alibi_slopes_for(problem.heads) : std::vector<float>{};
  return problem;
}

AttentionTensors with_index_arrays(AttentionTensors tensors, const AttentionProblem& problem) {
  const auto data_or_null = [](const auto& array) {
    return array.empty() ? nullptr : array.data();
  };
  tensors.cu_seqlens_q = data_or_null(problem.cu_seqlens_q);
  tensors.cu_seqlens_k = data_or_null(problem.cu_seqlens_k);
  tensors.block_table = data_or_null(problem.block_table);
  tensors.alibi_slopes = data_or_null(problem.alibi_slopes);
  return tensors;
}

std::int64_t q_span(const AttentionProblem& problem) {
  if (problem.varlen_q)
    return rows_span(problem.q_strides, 1, problem.total_q, problem.heads, problem.head_dim);
  return rows_span(problem.q_strides, problem.batch, problem.seq_len_q, problem.heads,
                   problem.head_dim);
}

std::int64_t o_span(const AttentionProblem& problem) {
  if (problem.varlen_q)
    return rows_span(problem.o_strides, 1, problem.total_q, problem.heads, problem.head_dim);
  return rows_span(problem.o_strides, problem.batch, problem.seq_len_q, problem.heads,
                   problem.head_dim);
}

std::int64_t output_trailing_guard_elements(const AttentionProblem& problem) {
  return kOutputGuardElements + (problem.varlen_q ? problem.seq_len_q * problem.o_strides.seq : 0) +
         std::max<std::int64_t>(0, q_span(problem) - o_span(problem));
}

namespace {

// Elements K or V (at `strides`) spans: the page pool, the packed rows or the batch.
std::int64_t key_value_span(const AttentionProblem& problem, const TensorStrides& strides) {
  if (problem.paged()) {
    return rows_span(strides, problem.pages, problem.page_size, problem.kv_heads, problem.head_dim);
  }
  if (problem.varlen_k)
    return rows_span(strides, 1, problem.total_k, problem.kv_heads, problem.head_dim);
  return rows_span(strides, problem.batch, problem.seq_len_k, problem.kv_heads, problem.head_dim);
}

}  // namespace

std::int64_t k_span(const AttentionProblem& problem) {
  return key_value_span(problem, problem.k_strides);
}

std::int64_t v_span(const AttentionProblem& problem) {
  return key_value_span(problem, problem.v_strides);
}

std::int64_t lse_span(const AttentionProblem& problem) {
  return problem.return_lse ? problem.heads * problem.query_rows() : 0;
}

std::vector<float> alibi_slopes_for(std::int64_t heads) {
  std::vector<float> slopes(static_cast<std::size_t>(heads));
  for (std::int64_t h = 0; h < heads; ++h) {
    slopes[static_cast<std::size_t>(h)] = static_cast<float>(
        std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(heads)));
  }
  return slopes;
}

double AttentionProblem::largest_bias(std::int64_t b, std::int64_t h, std::int64_t i) const {
  if (!alibi) return 0.0;
  const KeyRange keys = visible_keys_of(b, i);
  if (keys.empty()) return 0.0;
  const std::int64_t seq_q = seq_len_q_of(b), seq_k = seq_len_k_of(b);
  const std::int64_t farthest = std::max(alibi_distance(i, keys.first, seq_q, seq_k),
                                         alibi_distance(i, keys.end - 1, seq_q, seq_k));
  return static_cast<double>(alibi_slopes[static_cast<std::size_t>(h)]) *
         static_cast<double>(farthest);
}

std::string describe_shape(const AttentionProblem& problem) {
  std::ostringstream text;
  text << "B=" << problem.batch << " H=" << problem.heads;
  if (problem.kv_heads != problem.heads) text << "/" << problem.kv_heads;
  text << " Sq=" << problem.seq_len_q << " Sk=" << problem.seq_len_k << " D=" << problem.head_dim
       << " " << dtype_name(problem.dtype);
  if (problem.fp8_inputs()) {
    text << " qkv=" << dtype_name(problem.q_dtype()) << "/" << dtype_name(problem.k_dtype()) << "/"
         << dtype_name(problem.v_dtype());
    if (problem.descale != Descale::none) text << " descale=" << descale_name(problem.descale);
  }
  if (problem.causal) text << " causal";
  if (problem.varlen_q || problem.varlen_k) {
    text << " varlen" << (problem.varlen_q ? "q" : "") << (problem.varlen_k ? "k" : "");
  }
  if (problem.paged()) text << " page=" << problem.page_size;
  if (problem.window_left >= 0 || problem.window_right >= 0) {
    text << " window=(" << problem.window_left << "," << problem.window_right << ")";
  }
  if (problem.softcap > 0.0) text << " softcap=" << problem.softcap;
  if (problem.alibi) text << " alibi";
  if (problem.return_lse) text << " lse";
  return text.str();
}

double attention_flops(const AttentionProblem& problem) {
  if (problem.varlen_q || problem.varlen_k) {
    double pairs = 0.0;
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      pairs += static_cast<double>(problem.seq_len_q_of(b)) *
               static_cast<double>(problem.seq_len_k_of(b));
    }
    return 4.0 * static_cast<double>(problem.heads) * pairs * static_cast<double>(problem.head_dim);
  }
  return 4.0 * static_cast<double>(problem.batch) * static_cast<double>(problem.heads) *
         static_cast<double>(problem.seq_len_q) * static_cast<double>(problem.seq_len_k) *
         static_cast<double>(problem.head_dim);
}

}  // namespace attnfuzz
