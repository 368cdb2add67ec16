// SPDX-License-Identifier: BSD-3-Clause
// A dense problem's inputs taken pair by pair, as the device's references widen them: a pair is
// one (batch, kv head), its group of query heads stacked; a chunk of pairs is widened into compact
// row-major arrays
//   query [group * seq_len_q][head_dim]   key, value [seq_len_k][head_dim]
// element by element, each thread locating its element here. Host and device code alike, so that
// the CPU tests check the addressing the GPU uses (tests/oracle/test_pair_layout.cpp).
#pragma once

#include <cstdint>

#include "core/attention_problem.h"
#include "core/host_device.h"

namespace attnfuzz {

// A dense problem's inputs and the dimensions of its pairs.
struct PairGeometry {
  std::int64_t kv_heads, group, seq_len_q, seq_len_k, head_dim;
  TensorStrides q, k, v;
  bool fp16;

  explicit PairGeometry(const AttentionProblem& problem)
      : kv_heads(problem.kv_heads),
        group(problem.group_size()),
        seq_len_q(problem.seq_len_q),
        seq_len_k(problem.seq_len_k),
        head_dim(problem.head_dim),
        q(problem.q_strides),
        k(problem.k_strides),
        v(problem.v_strides),
        fp16(problem.dtype == Dtype::fp16) {}

  // Elements of one pair's widened query, and of its key (as of its value).
  ATTNFUZZ_HOST_DEVICE std::int64_t query_elements() const { return group * seq_len_q * head_dim; }
  ATTNFUZZ_HOST_DEVICE std::int64_t key_elements() const { return seq_len_k * head_dim; }
};

// Element `index` of a chunk whose first pair is `first`, in the order query, then key with
// value, pair after pair: where it comes from and where it goes.
struct PairElement {
  std::int64_t chunk_pair;  // the pair's place in the chunk
  bool is_query;
  std::int64_t at;      // its index in the pair's query or key array
  std::int64_t source;  // its offset in Q (query) or in K (key; value_source() gives V's)
  std::int64_t row, dim;
};

ATTNFUZZ_HOST_DEVICE inline PairElement locate_pair_element(const PairGeometry& g,
                                                            std::int64_t first,
                                                            std::int64_t index) {
  const std::int64_t per_pair = g.query_elements() + g.key_elements();
  PairElement element;
  element.chunk_pair = index / per_pair;
  const std::int64_t pair = first + element.chunk_pair, at = index % per_pair;
  const std::int64_t batch = pair / g.kv_heads, kv_head = pair % g.kv_heads;
  element.is_query = at < g.query_elements();
  element.at = element.is_query ? at : at - g.query_elements();
  element.row = element.at / g.head_dim;
  element.dim = element.at % g.head_dim;
  if (element.is_query) {
    const std::int64_t head = kv_head * g.group + element.row / g.seq_len_q;
    element.source =
        batch * g.q.batch + (element.row % g.seq_len_q) * g.q.seq + head * g.q.head + element.dim;
  } else {
    element.source = batch * g.k.batch + element.row * g.k.seq + kv_head * g.k.head + element.dim;
  }
  return element;
}

// The offset in V of a key element located by locate_pair_element.
ATTNFUZZ_HOST_DEVICE inline std::int64_t value_source(const PairGeometry& g, std::int64_t first,
                                                      const PairElement& element) {
  const std::int64_t pair = first + element.chunk_pair;
  return (pair / g.kv_heads) * g.v.batch + element.row * g.v.seq + (pair % g.kv_heads) * g.v.head +
         element.dim;
}

}  // namespace attnfuzz
