// SPDX-License-Identifier: BSD-3-Clause
// The tensors this thread drew by index most recently, kept in logical order, so that a case whose
// data is a recent case's copies them instead of drawing them again. A tensor's draws depend on its
// stream key (the seed, the problem's sizes, its dtype and whether it is causal:
// case/data_distribution.cpp), its distribution and its role, never on the rest of the mask, the
// scale, the layout, the storage or a variant; libFuzzer's mutations and the properties' partner
// cases change those far more often than the data, and the draws (a logarithm and a cosine per
// element, in single IEEE operations: case/input_draws.h) are most of a small case's time. What is
// copied is what would have been drawn: the same patterns, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "case/input_draws.h"

namespace attnfuzz {

// Everything a tensor drawn by index depends on.
struct DrawnTensorKey {
  std::uint64_t stream_key = 0;
  DataDistribution distribution = DataDistribution::normal;
  TensorRole tensor = TensorRole::query;
  double outlier = 0.0;
  std::int64_t batch = 0, seq_len = 0, heads = 0, head_dim = 0;
  Dtype dtype = Dtype::fp16;

  DrawnTensorKey(const TensorDraws& draws, const TensorShape& shape, Dtype dtype);
  bool operator==(const DrawnTensorKey&) const = default;
};

// The tensor's patterns in logical order (TensorShape::logical_index): kept from an earlier call on
// this thread with an equal key, or made by `draw` and kept. The most recent tensors stay, up to
// kDrawnTensorCacheElements elements in all; a larger tensor is drawn and not kept.
inline constexpr std::int64_t kDrawnTensorCacheElements = std::int64_t{1} << 24;  // 32 MiB
std::shared_ptr<const std::vector<std::uint16_t>> drawn_in_logical_order(
    const DrawnTensorKey& key, const std::function<std::vector<std::uint16_t>()>& draw);

// How often this thread's tensors came from the cache.
struct DrawnTensorCacheCounts {
  std::int64_t reused = 0, drawn = 0;
};
DrawnTensorCacheCounts drawn_tensor_cache_counts();

}  // namespace attnfuzz
