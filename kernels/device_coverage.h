// SPDX-License-Identifier: BSD-3-Clause
// Device-side coverage of cuda_flash: which tile paths and branches a launch took inside the GPU
// kernel, one byte per point in device memory. Switched on, cuda_flash records them; the libFuzzer
// target copies them into its extra counters after every case, so the fuzzer is guided by what
// happened on the device and not only by host code (which, for a GPU kernel, is just a launch).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace attnfuzz {

// X(id, what a launch did when the point is set)
#define ATTNFUZZ_DEVICE_COVERAGE_POINTS(X)                                                  \
  X(partial_query_tile, "a query tile had fewer than block_m rows")                         \
  X(partial_key_tile, "a key tile ended at seq_len_k inside the tile")                      \
  X(single_key_tile, "a query tile needed exactly one key tile")                            \
  X(many_key_tiles, "a query tile needed more than eight key tiles")                        \
  X(causal_diagonal_tile, "the causal diagonal crossed a key tile")                         \
  X(causal_tiles_skipped, "key tiles wholly past the causal diagonal were skipped")         \
  X(causal_tile_empty, "a query tile saw no key at all (causal, seq_len_q > seq_len_k)")    \
  X(fully_masked_row, "a query row saw no key and was written as 0")                        \
  X(running_max_grew, "the running maximum grew after the first key tile (a real rescale)") \
  X(correction_underflow, "a rescale factor underflowed to 0 (a jump of more than 103)")    \
  X(probability_underflow, "a visible key's probability underflowed to 0 in fp32")          \
  X(probability_subnormal, "a probability rounded into the input dtype's subnormal range")  \
  X(vector_loads, "input rows were loaded 16 bytes at a time")                              \
  X(element_loads, "input rows were loaded element by element (unaligned strides)")         \
  X(shared_kv_head, "several query heads read one key/value head (GQA/MQA)")                \
  X(output_nonfinite, "an output element was not finite")

enum class DeviceCoveragePoint : std::uint8_t {
#define ATTNFUZZ_COVERAGE_ENUM(id, what) id,
  ATTNFUZZ_DEVICE_COVERAGE_POINTS(ATTNFUZZ_COVERAGE_ENUM)
#undef ATTNFUZZ_COVERAGE_ENUM
};

struct DeviceCoverageInfo {
  DeviceCoveragePoint point;
  std::string_view name;
  std::string_view what;
};

inline constexpr DeviceCoverageInfo kDeviceCoveragePoints[] = {
#define ATTNFUZZ_COVERAGE_ROW(id, what) {DeviceCoveragePoint::id, #id, what},
    ATTNFUZZ_DEVICE_COVERAGE_POINTS(ATTNFUZZ_COVERAGE_ROW)
#undef ATTNFUZZ_COVERAGE_ROW
};
inline constexpr int kDeviceCoverageCount = static_cast<int>(std::size(kDeviceCoveragePoints));

// Switches recording on or off for later cuda_flash launches (off by default: the kernel then
// skips every store). Throws std::runtime_error on a CUDA error; a no-op without CUDA.
void set_device_coverage(bool enabled);

// The points set since the last call (one byte each, in kDeviceCoveragePoints order), and clears
// them. Empty without CUDA or while recording is off.
std::vector<std::uint8_t> take_device_coverage();

}  // namespace attnfuzz
