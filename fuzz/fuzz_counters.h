// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer's extra counters for attention cases: one byte per feature, in the section libFuzzer
// reads after every run (and clears before the next). A case that sets a counter no earlier input
// set is new coverage, so the corpus grows toward every shape class and every error magnitude.
#pragma once

#include <cstdint>
#include <span>

#include "case/attention_case.h"

namespace attnfuzz {

// Shape classes: tail of seq_len_q and seq_len_k against the 64-row tiles, where the causal
// diagonal falls (seq_len_q <, = or > seq_len_k), GQA ratio, head dim, dtype, layout, padding,
// distribution, injected special value, row length (up to 64, 512, 1024 keys, or longer), the
// softmax scale (default, below, above), the placement of the tensors, and a count past CUDA's
// grid y/z limit ((batch, head) pairs, batches, query rows).
void mark_shape_counters(const AttentionCase& attention_case);

// An input whose shape was over the work cap and was fitted under it (case/work_cap.h).
void mark_fitted_counter();

// Error magnitude: error_ratio quantised to its binary exponent, from 2^-24 to 2^8 and beyond.
void mark_error_counter(double error_ratio);

// Device-side coverage of a CUDA kernel (kernels/device_coverage.h): one counter per point set.
void mark_device_counters(std::span<const std::uint8_t> device_points);

}  // namespace attnfuzz
