// SPDX-License-Identifier: BSD-3-Clause
#include "case/drawn_tensor_cache.h"

#include <algorithm>
#include <utility>

namespace attnfuzz {
namespace {

struct Entry {
  DrawnTensorKey key;
  std::shared_ptr<const std::vector<std::uint16_t>> patterns;
};

// Most recently used first.
struct ThreadCache {
  std::vector<Entry> entries;
  std::int64_t elements = 0;
  DrawnTensorCacheCounts counts;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

}  // namespace

DrawnTensorKey::DrawnTensorKey(const TensorDraws& draws, const TensorShape& shape, Dtype dtype)
    : stream_key(draws.stream.key),
      distribution(draws.distribution),
      tensor(draws.tensor),
      outlier(draws.outlier),
      batch(shape.batch),
      seq_len(shape.seq_len),
      heads(shape.heads),
      head_dim(shape.head_dim),
      dtype(dtype) {}

std::shared_ptr<const std::vector<std::uint16_t>> drawn_in_logical_order(
    const DrawnTensorKey& key, const std::function<std::vector<std::uint16_t>()>& draw) {
  ThreadCache& cache = thread_cache();
  const auto found = std::find_if(cache.entries.begin(), cache.entries.end(),
                                  [&](const Entry& entry) { return entry.key == key; });
  if (found != cache.entries.end()) {
    ++cache.counts.reused;
    std::rotate(cache.entries.begin(), found, found + 1);  // to the front
    return cache.entries.front().patterns;
  }
  ++cache.counts.drawn;
  auto patterns = std::make_shared<const std::vector<std::uint16_t>>(draw());
  const auto size = static_cast<std::int64_t>(patterns->size());
  if (size > kDrawnTensorCacheElements) return patterns;
  while (cache.elements + size > kDrawnTensorCacheElements) {
    cache.elements -= static_cast<std::int64_t>(cache.entries.back().patterns->size());
    cache.entries.pop_back();
  }
  cache.entries.insert(cache.entries.begin(), Entry{key, patterns});
  cache.elements += size;
  return patterns;
}

DrawnTensorCacheCounts drawn_tensor_cache_counts() {
  return thread_cache().counts;
}

}  // namespace attnfuzz
