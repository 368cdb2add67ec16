// SPDX-License-Identifier: BSD-3-Clause
#include "fuzz/fuzz_counters.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "kernels/cuda_launch_limits.h"
#include "kernels/device_coverage.h"

namespace attnfuzz {
namespace {

// Counter layout: [feature group offset + value]. Groups are sized by the largest value + 1.
enum CounterGroup : int {
  kQueryTail = 0,       // 4: seq_len_q % 64 is 0, 1, 63, other
  kKeyTail = 4,         // 4: seq_len_k % 64
  kDiagonal = 8,        // 6: (causal, seq_len_q <, =, > seq_len_k)
  kGroupRatio = 14,     // 5: heads / kv_heads 1, 2, 3-4, 5+, and MQA (kv_heads 1 < heads)
  kHeadDim = 19,        // 8: by value bucket
  kDtype = 27,          // 2
  kLayout = 29,         // 4: (bhsd, padded)
  kDistribution = 33,   // 8
  kInjection = 41,      // 8: special value kind
  kErrorExponent = 49,  // 34: binary exponent of error_ratio from -24 to 8, and zero
  kKeyLength = 83,      // 4: seq_len_k up to 64, 512, 1024, and longer rows
  kScale = 87,          // 3: softmax_scale the default, below it, above it
  kFitted = 90,         // 1: the input's shape was fitted under the work cap
  kPlacement = 91,      // one per placement: where the tensors lie (core/attention_problem.h)
  kGridLimit = kPlacement + static_cast<int>(std::size(kPlacements)),  // 3: past 65535 pairs,
                                                                       // batches, query rows
  kDevice = kGridLimit + 3,  // kDeviceCoverageCount: the device-side coverage points of cuda_flash
  kCounterCount = kDevice + kDeviceCoverageCount,
};

#if defined(__linux__)
__attribute__((used, section("__libfuzzer_extra_counters")))
#endif
std::uint8_t counters[kCounterCount];

void mark(int index) {
  counters[index] = 1;
}

int tail_class(std::int64_t length) {
  const std::int64_t tail = length % 64;
  return tail == 0 ? 0 : tail == 1 ? 1 : tail == 63 ? 2 : 3;
}

}  // namespace

void mark_shape_counters(const AttentionCase& attention_case) {
  mark(kQueryTail + tail_class(attention_case.seq_len_q));
  mark(kKeyTail + tail_class(attention_case.seq_len_k));
  const int relation = attention_case.seq_len_q < attention_case.seq_len_k    ? 0
                       : attention_case.seq_len_q == attention_case.seq_len_k ? 1
                                                                              : 2;
  mark(kDiagonal + (attention_case.causal ? 3 : 0) + relation);
  const std::int64_t group = attention_case.heads / attention_case.kv_heads;
  mark(kGroupRatio + (group == 1 ? 0 : group == 2 ? 1 : group <= 4 ? 2 : 3));
  if (attention_case.kv_heads == 1 && attention_case.heads > 1) mark(kGroupRatio + 4);
  mark(kHeadDim + static_cast<int>(std::min<std::int64_t>(attention_case.head_dim / 32, 7)));
  mark(kDtype + static_cast<int>(attention_case.dtype));
  mark(kLayout + (attention_case.layout == Layout::bhsd ? 2 : 0) +
       (attention_case.row_padding > 0 ? 1 : 0));
  mark(kDistribution + static_cast<int>(attention_case.data) % 8);
  mark(kInjection + static_cast<int>(attention_case.injection.value) % 8);
  mark(kKeyLength + (attention_case.seq_len_k <= 64     ? 0
                     : attention_case.seq_len_k <= 512  ? 1
                     : attention_case.seq_len_k <= 1024 ? 2
                                                        : 3));
  mark(kPlacement + static_cast<int>(attention_case.placement));
  if (attention_case.seq_len_q > kMaxGridYZ) mark(kGridLimit + 2);
  if (attention_case.batch > kMaxGridYZ) {
    mark(kGridLimit + 1);
  } else if (attention_case.batch * attention_case.heads > kMaxGridYZ) {
    mark(kGridLimit);
  }
  const double default_scale = 1.0 / std::sqrt(static_cast<double>(attention_case.head_dim));
  mark(kScale + (attention_case.softmax_scale == 0.0            ? 0
                 : attention_case.softmax_scale < default_scale ? 1
                                                                : 2));
}

void mark_fitted_counter() {
  mark(kFitted);
}

void mark_error_counter(double error_ratio) {
  if (!(error_ratio > 0.0)) {
    mark(kErrorExponent);
    return;
  }
  const int exponent = std::isfinite(error_ratio) ? std::ilogb(error_ratio) : 8;
  mark(kErrorExponent + 1 + std::clamp(exponent, -24, 8) + 24);
}

void mark_device_counters(std::span<const std::uint8_t> device_points) {
  const int count = std::min(static_cast<int>(device_points.size()), kDeviceCoverageCount);
  for (int point = 0; point < count; ++point) {
    if (device_points[point] != 0) mark(kDevice + point);
  }
}

}  // namespace attnfuzz
