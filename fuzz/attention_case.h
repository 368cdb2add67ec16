// One case the harness runs: a problem, the recipe of its data, and the kernel to test. Everything
// a case needs to reproduce is here; matrix files, reports and replay all speak in these fields.
#pragma once

#include <cstdint>
#include <string>

#include "core/attention_problem.h"
#include "fuzz/data_distribution.h"

namespace attnfuzz {

struct AttentionCase {
  std::string id;      // "<matrix name>/<index>", stable for a given matrix file
  std::string kernel;  // empty: the backend's default kernel

  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t seq_len_q = 1;
  std::int64_t seq_len_k = 1;
  std::int64_t head_dim = 64;
  Dtype dtype = Dtype::fp16;
  bool causal = false;
  double softmax_scale = 0.0;  // 0: 1/sqrt(head_dim)
  Layout layout = Layout::bshd;
  std::int64_t row_padding = 0;  // unused elements after each head row (padded strides)

  DataDistribution data = DataDistribution::normal;
  std::uint64_t seed = 1;
  SpecialValueInjection injection;  // none by default

  bool operator==(const AttentionCase&) const = default;
};

// The scale a case runs with: its own, or 1/sqrt(head_dim) when it leaves it at 0.
double effective_softmax_scale(const AttentionCase& attention_case);

// The problem a case describes, strides and scale filled in.
AttentionProblem problem_of(const AttentionCase& attention_case);

// "B=16 H=4 Sq=448 Sk=448 D=64 fp16 data=normal seed=1", plus layout and padding when not default.
std::string describe_case(const AttentionCase& attention_case);

}  // namespace attnfuzz
