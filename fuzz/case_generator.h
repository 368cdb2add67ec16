// SPDX-License-Identifier: BSD-3-Clause
// RapidCheck generators of attention cases over the whole valid space, weighted toward the edges:
// sequence lengths 1, tile - 1, tile, tile + 1 (tiles of 64), seq_len_q != seq_len_k, every
// supported head dim, GQA ratios, every dtype, layout, distribution and special value (one case
// in four, where the limits ask for them). They shrink toward the smallest shape and the simplest
// data (normal, no injection). Used by the property engine (fuzz_attention --properties) and by the
// unit tests.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "case/attention_case.h"
#include "case/work_cap.h"
#include "core/problem_features.h"
#include "core/splitmix.h"
#include "kernels/cuda_launch_limits.h"

namespace attnfuzz {

// How RapidCheck prints a case (found by argument-dependent lookup).
inline void showValue(const AttentionCase& attention_case, std::ostream& out) {
  out << describe_case(attention_case);
}

// A whole number uniform in [min, max) at every size, shrinking toward min. (RapidCheck's
// gen::inRange narrows the range while the size is small, which starves preconditions.)
template <typename Value>
rc::Gen<Value> uniform(Value min, Value max) {
  return rc::Gen<Value>([min, max](const rc::Random& random, int) {
    const auto span = static_cast<std::uint64_t>(max - min);
    const Value value =
        static_cast<Value>(min + static_cast<Value>(rc::Random(random).next() % span));
    return rc::shrinkable::shrinkRecur(
        value, [min](Value x) { return rc::shrink::towards<Value>(x, min); });
  });
}

// One of `values`, uniformly at every size, shrinking toward the first. (RapidCheck's
// gen::element never shrinks.)
template <typename Value>
rc::Gen<Value> choice(std::vector<Value> values) {
  const std::size_t count = values.size();
  return rc::gen::map(uniform<std::size_t>(0, count),
                      [values = std::move(values)](std::size_t index) { return values[index]; });
}

inline rc::Gen<std::int64_t> sequence_length(std::int64_t max_length) {
  return rc::gen::weightedOneOf<std::int64_t>({
      {3, uniform<std::int64_t>(1, max_length + 1)},
      {2, choice<std::int64_t>({1, 2, 63, 64, 65, 127, 128, 129})},
  });
}

// The head dims the generator draws: those of the built-in kernels, and (with other_head_dims)
// others a plugin may have.
inline constexpr std::int64_t kBuiltInHeadDims[] = {64, 32, 96, 128, 256};
inline constexpr std::int64_t kOtherHeadDims[] = {80, 160, 192, 16};

// What the kernel under test can run, learnt before the search draws (fuzz/kernel_reach.h, which
// asks the kernel; defined here, with the generator that reads it): the generator draws nothing
// else, so that no draw is spent on a case the kernel would skip.
struct KernelReach {
  std::uint32_t features = kAllProblemFeatures;  // the variants it runs
  std::vector<std::int64_t> head_dims;           // empty: every head dim the generator draws
  std::vector<Dtype> dtypes;                     // empty: every dtype
  bool grouped_heads = true;                     // GQA and MQA: more query heads than kv heads
  bool backward = true;                          // a backward pass ("backward": true cases)
};

struct CaseLimits {
  std::int64_t max_seq_len = 200;
  std::vector<DataDistribution> distributions;  // empty: every distribution
  // Special values in 1 case of 4 (special_value_injection); off by default, so that a test's
  // observability argument about the cases it draws stays as it was written.
  bool injections = false;
  // The axes of the property search and the false-alarm bench; off by default, as above.
  bool other_scales = false;     // 1 case in 4 with softmax_scale 1/16 to 8 times the default
  bool long_rows = false;        // 1 case in 8 with 1025 to 8192 keys, fitted under the work cap
  bool other_head_dims = false;  // 1 case in 8 with a head dim no built-in kernel supports:
                                 // 16, 80, 160 or 192 (a plugin's, perhaps)
  bool decode_steps = false;     // 1 case in 8 a decode step: a few query rows, 257+ keys
  bool long_queries = false;     // 1 in 16 of the other cases a prefill: 257 to 4096 query
                                 // rows over 1 to 64 keys, at and around whole tiles
  bool launch_limits = false;    // 1 case in 64 past CUDA's 65535 blocks in grid y or z: more
                                 // (batch, head) pairs, batches or query rows than that
  KernelReach reach = {};        // what the kernel under test runs; default: everything
};

// The cases the property search (fuzz_attention --properties) draws from, and the false-alarm
// bench with it: sequences up to 256, every distribution and special value, and every wider axis.
inline CaseLimits search_case_limits(KernelReach reach = {}) {
  return {.max_seq_len = 256,
          .distributions = {},
          .injections = true,
          .other_scales = true,
          .long_rows = true,
          .other_head_dims = true,
          .decode_steps = true,
          .long_queries = true,
          .launch_limits = true,
          .reach = std::move(reach)};
}

// The values of `drawn` that `reached` holds (all of them when `reached` is empty).
template <typename Value>
std::vector<Value> reached_values(std::span<const Value> drawn, const std::vector<Value>& reached) {
  std::vector<Value> kept;
  for (const Value value : drawn) {
    if (reached.empty() || std::find(reached.begin(), reached.end(), value) != reached.end()) {
      kept.push_back(value);
    }
  }
  return kept;
}

// softmax_scale as a multiple of the default 1/sqrt(head_dim), or 0 (the default itself) 3 times
// in 4. Far on both sides: a kernel that ignores the scale, or hard-codes one, shows on either.
inline rc::Gen<double> scale_factor() {
  return rc::gen::weightedOneOf<double>({
      {3, rc::gen::just(0.0)},
      {1, choice<double>({1.0 / 16, 1.0 / 4, 1.0 / 2, 2.0, 4.0, 8.0})},
  });
}

// Keys of a long row: past the 1024 and 4096 marks, at and around whole tiles.
inline rc::Gen<std::int64_t> long_row_length() {
  return rc::gen::weightedOneOf<std::int64_t>({
      {1, uniform<std::int64_t>(1025, 8193)},
      {1, choice<std::int64_t>({1025, 2047, 2048, 2049, 4095, 4096, 4097, 8192})},
  });
}

// Query rows of a long prefill: past the 256 the other draws reach, at and around whole tiles (a
// one-row and a 63-row last tile among them), up to 4096.
inline rc::Gen<std::int64_t> long_query_length() {
  return rc::gen::weightedOneOf<std::int64_t>({
      {1, uniform<std::int64_t>(257, 4097)},
      {1, choice<std::int64_t>({257, 319, 320, 383, 512, 1023, 1025, 2048, 2049, 4095, 4096})},
  });
}

// A decode step's query rows and keys: one row most often, up to the 8 of speculative decoding;
// more than the 256 keys past which flash kernels split the keys (flash_tile_traits.h), at and
// around the split and tile edges, or up to 4096.
inline rc::Gen<std::pair<std::int64_t, std::int64_t>> decode_step() {
  return rc::gen::pair(choice<std::int64_t>({1, 1, 1, 2, 3, 4, 7, 8}),
                       rc::gen::weightedOneOf<std::int64_t>({
                           {1, uniform<std::int64_t>(257, 4097)},
                           {1, choice<std::int64_t>({257, 511, 512, 513, 1000, 2049, 4096})},
                       }));
}

// Which count a launch-limit case takes past CUDA's 65535 blocks in grid y or z (kMaxGridYZ),
// where kernels that put that count in one of those dimensions drop or refuse the work past it.
enum class LaunchLimit { none, pairs, batches, query_rows };

// A launch-limit draw: which count, how many blocks past the limit, and the head dim to take (0:
// the one drawn).
struct LaunchLimitDraw {
  LaunchLimit limit = LaunchLimit::none;
  std::int64_t beyond = 0;
  std::int64_t head_dim = 0;
};

// None 63 times in 64, else a count past the limit: by 1, 2 or 64 blocks (whole 64-row tiles, a
// one-row tail, a 63-row tail) 2 times in 3, or by up to 4096. Shrinks toward none, then toward
// just past the limit.
inline rc::Gen<LaunchLimitDraw> launch_limit(std::int64_t head_dim) {
  const auto past = rc::gen::map(
      rc::gen::pair(
          choice<LaunchLimit>({LaunchLimit::pairs, LaunchLimit::batches, LaunchLimit::query_rows}),
          rc::gen::weightedOneOf<std::int64_t>(
              {{2, choice<std::int64_t>({1, 2, 64})}, {1, uniform<std::int64_t>(1, 4097)}})),
      [head_dim](const auto& drawn) {
        return LaunchLimitDraw{drawn.first, drawn.second, head_dim};
      });
  return rc::gen::weightedOneOf<LaunchLimitDraw>(
      {{63, rc::gen::just(LaunchLimitDraw{})}, {1, past}});
}

// The case past a launch limit, kept cheap (one query row or one head, at most four keys, the
// draw's head dim): `beyond` blocks past 65535 of (batch, head) pairs, of batches alone, or of one
// sequence's query rows. Not fitted under the work cap: the count past the limit is the point.
inline AttentionCase past_launch_limit(AttentionCase attention_case, const LaunchLimitDraw& draw) {
  if (draw.limit == LaunchLimit::none) return attention_case;
  if (draw.head_dim != 0) attention_case.head_dim = draw.head_dim;
  attention_case.seq_len_k = 1 + (attention_case.seq_len_k - 1) % 4;
  attention_case.seq_len_q = 1;
  switch (draw.limit) {
    case LaunchLimit::none:
      break;
    case LaunchLimit::pairs:
      attention_case.batch =
          (kMaxGridYZ + draw.beyond + attention_case.heads - 1) / attention_case.heads;
      break;
    case LaunchLimit::batches:
      attention_case.heads = attention_case.kv_heads = 1;
      attention_case.batch = kMaxGridYZ + draw.beyond;
      break;
    case LaunchLimit::query_rows:
      attention_case.heads = attention_case.kv_heads = attention_case.batch = 1;
      attention_case.seq_len_q = kMaxGridYZ + draw.beyond;
      break;
  }
  return attention_case;
}

// The placements as drawn: shared (every tensor in the case's layout) half of the time, each other
// placement equally often in the other half. Shrinks toward shared.
inline std::vector<Placement> drawn_placements() {
  std::vector<Placement> drawn;
  for (std::size_t others = 1; others < std::size(kPlacements); ++others) {
    drawn.push_back(Placement::shared);
  }
  for (const PlacementInfo& info : kPlacements) {
    if (info.placement != Placement::shared) drawn.push_back(info.placement);
  }
  return drawn;
}

// No injection 3 times in 4; otherwise 1 to 8 elements of one tensor set to one kind. Shrinks
// toward no injection.
inline rc::Gen<SpecialValueInjection> special_value_injection() {
  std::vector<SpecialValue> kinds;
  for (const SpecialValueInfo& info : kSpecialValues) {
    if (info.value != SpecialValue::none) kinds.push_back(info.value);
  }
  const auto injected = rc::gen::map(
      rc::gen::tuple(choice(std::move(kinds)),
                     choice<TensorRole>({TensorRole::value, TensorRole::query, TensorRole::key}),
                     uniform<std::int64_t>(1, 9)),
      [](const auto& parts) {
        const auto& [kind, tensor, count] = parts;
        return SpecialValueInjection{kind, tensor, count};
      });
  return rc::gen::map(rc::gen::pair(uniform(0, 4), injected), [](const auto& drawn) {
    return drawn.first < 3 ? SpecialValueInjection{} : drawn.second;
  });
}

// Independent choices combined with gen::tuple, so that RapidCheck shrinks every one of them
// (toward batch 1, one head, short sequences, head_dim 64, fp16, bshd, shared placement, normal
// data, seed 0).
inline rc::Gen<AttentionCase> small_case(CaseLimits limits = {}) {
  std::vector<DataDistribution> distributions = limits.distributions;
  if (distributions.empty()) {
    for (const DataDistributionInfo& info : kDataDistributions) {
      distributions.push_back(info.distribution);
    }
  }
  // The head dims and dtypes the kernel runs, of those drawn; all of them when it runs none.
  std::vector<std::int64_t> built_in_dims =
      reached_values<std::int64_t>(kBuiltInHeadDims, limits.reach.head_dims);
  std::vector<std::int64_t> other_dims =
      limits.other_head_dims ? reached_values<std::int64_t>(kOtherHeadDims, limits.reach.head_dims)
                             : std::vector<std::int64_t>{};
  if (built_in_dims.empty() && other_dims.empty()) {
    built_in_dims.assign(std::begin(kBuiltInHeadDims), std::end(kBuiltInHeadDims));
  }
  // Launch-limit cases take the smallest built-in head dim the kernel runs (0: none; the drawn
  // one).
  const std::int64_t smallest_head_dim =
      built_in_dims.empty() ? 0 : *std::min_element(built_in_dims.begin(), built_in_dims.end());
  const rc::Gen<std::int64_t> head_dim =
      built_in_dims.empty() ? choice(std::move(other_dims))
      : other_dims.empty()
          ? choice(std::move(built_in_dims))
          : rc::gen::weightedOneOf<std::int64_t>(
                {{7, choice(std::move(built_in_dims))}, {1, choice(std::move(other_dims))}});
  std::vector<Dtype> all_dtypes;
  for (const DtypeTraits& traits : output_dtypes()) all_dtypes.push_back(traits.dtype);
  std::vector<Dtype> dtypes = reached_values<Dtype>(all_dtypes, limits.reach.dtypes);
  if (dtypes.empty()) dtypes = all_dtypes;
  const auto shape = rc::gen::tuple(
      rc::gen::inRange<std::int64_t>(1, 3),  // batch
      choice<std::int64_t>({1, 2, 3}),       // kv_heads
      limits.reach.grouped_heads ? choice<std::int64_t>({1, 2, 3})
                                 : rc::gen::just<std::int64_t>(1),  // query heads per kv head
      sequence_length(limits.max_seq_len),                          // seq_len_q
      rc::gen::maybe(sequence_length(limits.max_seq_len)),  // seq_len_k (nothing: = seq_len_q)
      head_dim);                                            // head_dim
  // What the wider axes add: a scale factor, a long row length (0: none), a decode step's rows and
  // keys ({0, 0}: none) and a prefill's query rows (0: none), shrinking to none.
  const rc::Gen<std::pair<std::int64_t, std::int64_t>> no_decode_step =
      rc::gen::just(std::pair<std::int64_t, std::int64_t>{0, 0});
  const auto wider = rc::gen::tuple(
      limits.other_scales ? scale_factor() : rc::gen::just(0.0),
      limits.long_rows ? rc::gen::weightedOneOf<std::int64_t>(
                             {{7, rc::gen::just<std::int64_t>(0)}, {1, long_row_length()}})
                       : rc::gen::just<std::int64_t>(0),
      limits.decode_steps ? rc::gen::weightedOneOf<std::pair<std::int64_t, std::int64_t>>(
                                {{7, no_decode_step}, {1, decode_step()}})
                          : no_decode_step,
      limits.long_queries ? rc::gen::weightedOneOf<std::int64_t>(
                                {{15, rc::gen::just<std::int64_t>(0)}, {1, long_query_length()}})
                          : rc::gen::just<std::int64_t>(0),
      limits.launch_limits ? launch_limit(smallest_head_dim) : rc::gen::just(LaunchLimitDraw{}));
  const auto numerics_and_data = rc::gen::tuple(
      choice(std::move(dtypes)), choice<bool>({false, true}),  // dtype, causal
      choice<Layout>({Layout::bshd, Layout::bhsd}),
      choice<std::int64_t>({0, 0, 8, 1}),  // row_padding
      choice(drawn_placements()), choice(std::move(distributions)),
      uniform<std::uint64_t>(0, std::uint64_t{1} << 32),
      limits.injections ? special_value_injection() : rc::gen::just(SpecialValueInjection{}));
  return rc::gen::map(rc::gen::tuple(shape, numerics_and_data, wider), [](const auto& choices) {
    const auto& [batch, kv_heads, group, seq_len_q, seq_len_k, head_dim] = std::get<0>(choices);
    const auto& [dtype, causal, layout, row_padding, placement, data, seed, injection] =
        std::get<1>(choices);
    const auto& [scale_multiple, long_row, decode, long_query, launch] = std::get<2>(choices);
    AttentionCase attention_case;
    attention_case.id = "generated";
    attention_case.batch = batch;
    attention_case.kv_heads = kv_heads;
    attention_case.heads = kv_heads * group;
    attention_case.seq_len_q = seq_len_q;
    attention_case.seq_len_k = seq_len_k ? *seq_len_k : seq_len_q;
    attention_case.head_dim = head_dim;
    attention_case.dtype = dtype;
    attention_case.causal = causal;
    attention_case.layout = layout;
    attention_case.row_padding = row_padding;
    attention_case.placement = placement;
    attention_case.data = data;
    attention_case.seed = seed;
    attention_case.injection = injection;
    if (scale_multiple != 0.0) {
      attention_case.softmax_scale =
          scale_multiple / std::sqrt(static_cast<double>(attention_case.head_dim));
    }
    if (launch.limit != LaunchLimit::none) {
      attention_case = past_launch_limit(attention_case, launch);
    } else if (long_row != 0) {
      attention_case.seq_len_k = long_row;
      attention_case = fit_to_work_cap(attention_case);  // the row stays long, the rest gives way
    } else if (decode.first != 0) {
      attention_case.seq_len_q = decode.first;
      attention_case.seq_len_k = decode.second;
      attention_case = fit_to_work_cap(attention_case);
    } else if (long_query != 0) {
      attention_case.seq_len_q = long_query;
      attention_case.seq_len_k = 1 + (attention_case.seq_len_k - 1) % 64;
      attention_case = fit_to_work_cap(attention_case);
    }
    return attention_case;
  });
}

// Per-sequence lengths of a packed batch of `batch` sequences of up to `longest` rows, drawn from
// `seed`: the edge cases (empty, one row, the longest) as often as the rest together.
inline std::vector<std::int64_t> drawn_sequence_lengths(std::int64_t batch, std::int64_t longest,
                                                        std::uint64_t seed) {
  std::vector<std::int64_t> lengths;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::uint64_t draw = splitmix64_step(seed + static_cast<std::uint64_t>(b));
    switch (draw % 6) {
      case 0:
        lengths.push_back(0);
        break;
      case 1:
        lengths.push_back(std::min<std::int64_t>(1, longest));
        break;
      case 2:
        lengths.push_back(longest);
        break;
      default:
        lengths.push_back(
            static_cast<std::int64_t>((draw >> 8) % static_cast<std::uint64_t>(longest + 1)));
    }
  }
  return lengths;
}

// fp8 inputs as a case holds them: each of Q, K, V in the case's dtype or an fp8 format, and the
// descale form (none when no tensor is fp8).
struct Fp8InputsDraw {
  InputStorage q = InputStorage::same;
  InputStorage k = InputStorage::same;
  InputStorage v = InputStorage::same;
  Descale descale = Descale::none;
};

// fp8 inputs one case in four, shrinking to none: FlashAttention 3's form (Q, K, V fp8), an fp8
// KV cache (K and V), or any other mix, each tensor e4m3 or e5m2, with each descale form.
inline rc::Gen<Fp8InputsDraw> fp8_inputs() {
  const auto storage =
      choice<InputStorage>({InputStorage::same, InputStorage::e4m3, InputStorage::e5m2});
  const auto drawn = rc::gen::map(
      rc::gen::tuple(choice<int>({0, 1, 2}), storage, storage, storage,
                     choice<Descale>({Descale::none, Descale::per_tensor, Descale::per_kv_head})),
      [](const auto& choices) {
        const auto& [form, q, k, v, descale] = choices;
        Fp8InputsDraw draw;
        const InputStorage fp8 = k == InputStorage::same ? InputStorage::e4m3 : k;
        switch (form) {
          case 0:  // FlashAttention 3: all three in one format
            draw.q = draw.k = draw.v = fp8;
            break;
          case 1:  // an fp8 KV cache
            draw.k = draw.v = fp8;
            break;
          default:  // any mix, at least one tensor fp8
            draw.q = q;
            draw.k = k;
            draw.v = q == InputStorage::same && k == InputStorage::same && v == InputStorage::same
                         ? fp8
                         : v;
        }
        draw.descale = descale;
        return draw;
      });
  return rc::gen::weightedOneOf<Fp8InputsDraw>({{3, rc::gen::just(Fp8InputsDraw{})}, {1, drawn}});
}

// The attention variants on top of `base`'s cases, each on about half the time and shrinking to
// off: packed query and/or key lengths, paged K/V (pages of 16, 64, 256 rows and an odd one),
// sliding windows (either side, narrow or wide, with or without causal), soft-capping, ALiBi,
// the log-sum-exp output and fp8 inputs; and with `backward` (the kernel has a backward pass), one
// case in four judges the backward pass too, without paged K/V (which no built-in backward takes).
// Only the variants in `features` (the kernel's reach) are drawn.
inline rc::Gen<AttentionCase> with_variants(rc::Gen<AttentionCase> base,
                                            std::uint32_t features = kAllProblemFeatures,
                                            bool backward = false) {
  const auto variants =
      rc::gen::tuple(choice<int>({0, 0, 0, 1, 2, 3}),                  // varlen: none, q, k, both
                     choice<std::int64_t>({0, 0, 0, 16, 64, 256, 5}),  // page_size
                     choice<std::int64_t>({-1, -1, -1, 0, 1, 7, 64, 130}),   // window_left
                     choice<std::int64_t>({-1, -1, -1, 0, 1, 9, 100}),       // window_right
                     choice<double>({0.0, 0.0, 0.0, 2.5, 5.0, 30.0, 50.0}),  // softcap
                     choice<bool>({false, false, true}),                     // alibi
                     choice<bool>({false, true}),                            // return_lse
                     uniform<std::uint64_t>(0, std::uint64_t{1} << 32),      // the lengths' seed
                     choice<bool>({false, false, false, true}),              // backward
                     fp8_inputs());
  return rc::gen::map(
      rc::gen::pair(std::move(base), variants), [features, backward](const auto& drawn) {
        AttentionCase attention_case = drawn.first;
        auto [varlen, page_size, window_left, window_right, softcap, alibi, return_lse,
              lengths_seed, backward_pass, fp8] = drawn.second;
        const auto declared = [features](ProblemFeature feature) {
          return (features & static_cast<std::uint32_t>(feature)) != 0;
        };
        if (!declared(ProblemFeature::varlen)) varlen = 0;
        if (!declared(ProblemFeature::paged_kv)) page_size = 0;
        if (!declared(ProblemFeature::sliding_window)) window_left = window_right = -1;
        if (!declared(ProblemFeature::softcap)) softcap = 0.0;
        if (!declared(ProblemFeature::alibi)) alibi = false;
        if (!declared(ProblemFeature::return_lse)) return_lse = false;
        if (!declared(ProblemFeature::fp8_inputs)) fp8 = Fp8InputsDraw{};
        attention_case.backward = backward && backward_pass;
        if (attention_case.backward) {
          page_size = 0;
          fp8 = Fp8InputsDraw{};  // no backward takes fp8 inputs (nor does FlashAttention 3's)
        }
        attention_case.q_storage = fp8.q;
        attention_case.k_storage = fp8.k;
        attention_case.v_storage = fp8.v;
        attention_case.descale = fp8.descale;
        if (varlen & 1)
          attention_case.seq_lens_q =
              drawn_sequence_lengths(attention_case.batch, attention_case.seq_len_q, lengths_seed);
        if (varlen & 2)
          attention_case.seq_lens_k =
              drawn_sequence_lengths(attention_case.batch, attention_case.seq_len_k, ~lengths_seed);
        attention_case.page_size = page_size;
        // A page per sequence is most of a pool of many sequences of a few keys (a launch-limit
        // case's): pages are halved toward the work cap, down to one row, which keeps such a pool
        // within a few times the cap (packed placements widen its rows).
        while (attention_case.page_size > 1 && page_pool_elements(attention_case) > kCaseWorkCap) {
          attention_case.page_size /= 2;
        }
        attention_case.window_left = window_left;
        attention_case.window_right = window_right;
        attention_case.softcap = softcap;
        attention_case.alibi = alibi;
        attention_case.return_lse = return_lse;
        return attention_case;
      });
}

// What the property search checks against the oracle (matches_oracle), and the false-alarm bench
// with it: every case search_case_limits() allows, with the variants. (The metamorphic properties
// draw small_case(search_case_limits()) alone: their relations are written for dense cases.)
// `reach`: what the kernel under test runs (fuzz/kernel_reach.h); default: everything.
inline rc::Gen<AttentionCase> search_cases(const KernelReach& reach = {}) {
  return with_variants(small_case(search_case_limits(reach)), reach.features, reach.backward);
}

}  // namespace attnfuzz
