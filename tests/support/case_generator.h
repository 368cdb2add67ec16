// RapidCheck generators of small attention cases for the unit tests: every dtype, head dim,
// distribution and layout, sequence lengths weighted toward tile edges (block size 64), GQA/MQA.
// Small enough that thousands of cases run in seconds.
#pragma once

#include <rapidcheck.h>

#include <ostream>

#include "fuzz/attention_case.h"

namespace attnfuzz {

// How RapidCheck prints a case when a property fails (found by argument-dependent lookup).
inline void showValue(const AttentionCase& attention_case, std::ostream& out) {
  out << describe_case(attention_case);
}

}  // namespace attnfuzz

namespace attnfuzz::testing {

inline rc::Gen<std::int64_t> sequence_length(std::int64_t max_length) {
  return rc::gen::weightedOneOf<std::int64_t>({
      {3, rc::gen::inRange<std::int64_t>(1, max_length + 1)},
      {2, rc::gen::element<std::int64_t>(1, 2, 63, 64, 65, 127, 128, 129)},
  });
}

struct CaseLimits {
  std::int64_t max_seq_len = 200;
  std::vector<DataDistribution> distributions;  // empty: every distribution
};

inline rc::Gen<AttentionCase> small_case(CaseLimits limits = {}) {
  return rc::gen::exec([limits] {
    AttentionCase attention_case;
    attention_case.id = "generated";
    attention_case.batch = *rc::gen::inRange<std::int64_t>(1, 3);
    attention_case.kv_heads = *rc::gen::element<std::int64_t>(1, 2, 3);
    attention_case.heads = attention_case.kv_heads * *rc::gen::element<std::int64_t>(1, 2, 3);
    attention_case.seq_len_q = *sequence_length(limits.max_seq_len);
    attention_case.seq_len_k = *rc::gen::weightedOneOf<std::int64_t>(
        {{1, rc::gen::just(attention_case.seq_len_q)}, {2, sequence_length(limits.max_seq_len)}});
    attention_case.head_dim = *rc::gen::element<std::int64_t>(32, 64, 96, 128, 256);
    attention_case.dtype = *rc::gen::element(Dtype::fp16, Dtype::bf16);
    attention_case.causal = *rc::gen::arbitrary<bool>();
    attention_case.layout = *rc::gen::element(Layout::bshd, Layout::bhsd);
    attention_case.row_padding = *rc::gen::element<std::int64_t>(0, 0, 8);
    if (limits.distributions.empty()) {
      attention_case.data = *rc::gen::element(
          DataDistribution::normal, DataDistribution::uniform, DataDistribution::large_scores,
          DataDistribution::peaked_softmax, DataDistribution::flat_softmax,
          DataDistribution::small_integers, DataDistribution::value_outliers);
    } else {
      attention_case.data = *rc::gen::elementOf(limits.distributions);
    }
    attention_case.seed = *rc::gen::arbitrary<std::uint32_t>();
    return attention_case;
  });
}

}  // namespace attnfuzz::testing
