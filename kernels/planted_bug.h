// SPDX-License-Identifier: BSD-3-Clause
// The catalogue of planted bugs: real bug classes that kernel authors have shipped, each one
// switchable at run time (`fuzz_attention --plant NAME`) so that the harness can prove it catches
// them. A kernel lists the plants it implements; the rest of the harness sees only this table.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace attnfuzz {

// X(id, what the planted code does wrong, the real-world slip it stands for)
// Bugs of the algorithm: every FlashAttention-style kernel, on the CPU or the GPU, can have them.
#define ATTNFUZZ_ALGORITHM_PLANTED_BUGS(X)                                                         \
  X(drop_last_key_tile, "skips the last, partial key tile when seq_len_k % block_n != 0",          \
    "loop bound seq_len_k / block_n instead of a ceiling division")                                \
  X(causal_off_by_one, "lets query i see key i + seq_len_k - seq_len_q + 1 under the causal mask", \
    "'<=' written for '<' in the mask predicate")                                                  \
  X(running_max_init_zero, "starts the running row maximum at 0 instead of -inf",                  \
    "rows whose scores are all far below 0 underflow to a zero row sum")                           \
  X(skip_rescale, "does not rescale the output accumulator when the running maximum grows",        \
    "the online-softmax correction exp(m_old - m_new) forgotten for the accumulator")              \
  X(masked_row_nan, "divides by a zero row sum for fully masked rows",                             \
    "no guard for rows that see no key, as causal with seq_len_q > seq_len_k has")                 \
  X(partial_last_query_tile_unwritten,                                                             \
    "never computes or writes the last, partial query tile when seq_len_q % block_m != 0",         \
    "grid size seq_len_q / block_m instead of a ceiling division")                                 \
  X(causal_top_left, "aligns the causal mask top-left (key j visible iff j <= i)",                 \
    "the mask written for seq_len_q == seq_len_k, missing the seq_len_k - seq_len_q shift")        \
  X(scale_hardcoded_64, "uses softmax scale 1/sqrt(64) whatever head_dim and softmax_scale",       \
    "a constant from the head_dim 64 kernel the others were copied from")                          \
  X(gqa_modulo, "reads kv head head % kv_heads instead of head / (heads / kv_heads)",              \
    "GQA head mapping interleaved instead of grouped")                                             \
  X(pv_fp16_accumulation, "keeps the P V accumulator in the input dtype, rounded every key tile",  \
    "an fp16-accumulate MMA (or a half accumulator fragment) for P V")                             \
  X(batch_stride_unpadded, "steps between batches by the compact size seq_len * heads * head_dim", \
    "a batch offset computed from the shape instead of the tensor's batch stride")                 \
  X(o_with_q_strides, "addresses O with Q's strides",                                              \
    "the output assumed laid out like the query: wrong for a fresh O or a slice of a larger one")  \
  X(v_with_k_strides, "addresses V with K's strides",                                              \
    "one stride set for the K/V cache: wrong for a V cache laid out apart from K's")               \
  X(pairs_past_grid_limit_dropped,                                                                 \
    "computes only the first 65535 (batch, head) pairs: the rest of the output is never written",  \
    "batch x heads flattened into grid y or z, whose launch limit is 65535, and the grid clamped " \
    "to it")                                                                                       \
  X(query_rows_past_grid_limit_dropped,                                                            \
    "computes only the first 65535 query rows of a sequence: later rows are never written",        \
    "one block per query row with the rows in grid y or z, clamped to its 65535 launch limit")     \
  X(no_max_subtraction, "exponentiates scores without subtracting the running row maximum",        \
    "the softmax max subtraction left out: exp overflows to inf for large scores")                 \
  X(read_past_seq_len_k, "does not mask the last key tile at seq_len_k: reads and uses its rows",  \
    "the tail-column mask missing on the non-causal path (the causal mask hides it there)")        \
  X(stale_row_sum, "normalises by the row sum from before the last key tile's contribution",       \
    "the final division taken before the last tile's row sum was added")                           \
  X(scale_ignored, "uses 1/sqrt(head_dim) as the softmax scale whatever softmax_scale says",       \
    "the caller's scale argument dropped in favour of the textbook default")                       \
  X(single_key_wrong_kv_head,                                                                      \
    "with a single key (seq_len_k == 1) reads kv head head % kv_heads instead of its group's",     \
    "a decode fast path for one cached key with its own, interleaved GQA head mapping")            \
  X(split_kv_input_dtype_combine,                                                                  \
    "past 1024 keys, combines its 128-key splits in a running sum kept in the input dtype",        \
    "split-KV partial outputs and row sums accumulated in fp16/bf16 instead of fp32")              \
  X(output_truncation, "converts the output to the dtype by truncation (toward zero)",             \
    "__float2half_rz (or a bit shift for bf16) where round to nearest even was meant")             \
  X(flaky_last_ulp, "on every second call, writes the output's last element one ulp off",          \
    "a race or an atomic reduction whose order varies: the same inputs give other bits")           \
  X(varlen_offset_wrong_end,                                                                       \
    "reads and writes sequence b's query and output rows from cu_seqlens_q[b + 1], not [b]",       \
    "the packed batch's offset taken from the wrong end of cu_seqlens")                            \
  X(block_table_logical_page, "reads K/V page b * pages_per_sequence + p, not block_table[b][p]",  \
    "the paged cache indexed by the logical page, the block table never consulted")                \
  X(window_edge_off_by_one, "lets query i see one key past the left edge of the sliding window",   \
    "'>' written for '>=' in the window's left-edge test")                                         \
  X(softcap_before_scale, "soft-caps the raw score Q.K, then applies the softmax scale",           \
    "softcap * tanh(s / softcap) taken before the multiplication by softmax_scale")                \
  X(alibi_top_left, "measures ALiBi's distance as |i - j|, not |i + seq_len_k - seq_len_q - j|",   \
    "the bias written for seq_len_q == seq_len_k, missing the bottom-right alignment")             \
  X(lse_log2, "stores the log-sum-exp in base 2",                                                  \
    "the exp2-domain value FlashAttention computes "                                               \
    "in (log2(sum) + max * scale * log2(e)) stored without the final multiplication by ln 2")      \
  X(split_kv_merge_ignores_lse,                                                                    \
    "merges the split-KV partial outputs with equal weights, ignoring each split's log-sum-exp",   \
    "a combine step that averages the splits' normalised outputs, as if every split saw keys of "  \
    "the same total weight")

// Bugs of the calling contract: the output is right, but the kernel writes what it must only read.
// The harness keeps the originals of every input it hands a kernel (run/kernel_inputs.h), so the
// change is found, and the output is judged against what the inputs were.
#define ATTNFUZZ_CONTRACT_PLANTED_BUGS(X)                                                     \
  X(query_scaled_in_place, "once the output is written, doubles every element of Q in place", \
    "an in-place scaling or RoPE applied to the caller's Q, or Q used as a workspace")

// More bugs of the calling contract, planted in the host kernel only: each writes an input in
// place, before or after computing, as the plugin fixtures of
// tests/plugins/input_writing_attention.c do. A harness that judged a kernel by the buffers it
// handed it would pass the first four.
#define ATTNFUZZ_HOST_CONTRACT_PLANTED_BUGS(X)                                                  \
  X(inputs_zeroed_before_compute, "zeroes Q, K and V in place, then computes on the zeros",     \
    "a workspace aliased to the inputs and cleared before use")                                 \
  X(block_table_rewritten,                                                                      \
    "points the block table at the logical pages in place, then reads the pages through it",    \
    "a kernel that 'normalises' the caller's block table where it lies")                        \
  X(alibi_slopes_zeroed, "zeroes the ALiBi slopes in place, then computes without the bias",    \
    "the slopes' buffer reused as scratch space")                                               \
  X(cu_seqlens_emptied, "zeroes cu_seqlens_q and cu_seqlens_k in place and writes nothing",     \
    "offsets computed in place in the caller's cu_seqlens, then every sequence taken as empty") \
  X(key_written_past_end, "once the output is written, writes the element 64 past K's end",     \
    "a KV-cache append one row past the cache's end")

// Bugs of a host kernel's memory and time: it writes where nothing of the case lies, keeps what it
// allocates, or never returns. Its outputs may be right; what catches these is the containment of
// a run: the fences past every buffer's guard margin (core/fenced_buffer.h), the watch on a
// worker's memory from case to case (--memory-limit) and the watchdog (--case-timeout); under
// libFuzzer, its crash handler, -rss_limit_mb and -timeout. A run without workers would die of
// them, so only contained runs plant them.
#define ATTNFUZZ_CONTAINMENT_PLANTED_BUGS(X)                                                       \
  X(output_written_far_past_end,                                                                   \
    "once the output is written, stores one element 4096 past the guard margin after the output",  \
    "an output pointer advanced by the wrong stride for the last head or batch: a store far "      \
    "outside the tensor, into whatever the allocator put there")                                   \
  X(lse_written_far_past_end,                                                                      \
    "once the log-sum-exp is written, stores one value 4096 past the guard margin after it",       \
    "the log-sum-exp indexed [head][batch] where [batch][head] was meant, on a buffer sized for "  \
    "one")                                                                                         \
  X(workspace_leaked_per_call,                                                                     \
    "allocates a 64 MiB workspace on every call, fills it, never frees",                           \
    "a per-call scratch buffer malloc'd without its free, or a cache that grows with every call")  \
  X(hangs_on_row_without_keys, "never returns when a query row sees no key",                       \
    "a loop that waits for the row's first visible key tile, which a mask hiding every key never " \
    "brings")

// Races: whether they change a single output value depends on how the warps happen to be
// scheduled (on an H100 the missing barrier below changed none in the edge matrix), so
// comparing outputs is no detector for them. compute-sanitizer racecheck is: it sees the
// unordered shared-memory accesses themselves (ctest
// cuda_flash.racecheck_finds_missing_syncthreads).
#define ATTNFUZZ_RACE_PLANTED_BUGS(X)                                                        \
  X(missing_syncthreads, "starts reading a K/V tile before every warp has stored its share", \
    "the __syncthreads() between the shared-memory stores and the MMA reads left out: a race")

// Bugs only a GPU kernel can have: they live in its memory model, not in the algorithm.
#define ATTNFUZZ_GPU_PLANTED_BUGS(X)                                                          \
  X(write_past_output_end, "stores the row after the last query row of a partial query tile", \
    "the store guard written 'row <= seq_len_q': one row past the output (or into the next head)")

// Bugs of speed, not of values: the output is the same, bit for bit, and only the performance gate
// (fuzz_attention --bench, side by side with --against-plant none or against a --baseline) can see
// them. They test the gate itself.
#define ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(X)                                                       \
  X(slow_extra_pass,                                                                               \
    "makes a first pass over every key tile whose scores it throws away: the same output, slower", \
    "the max-finding pre-pass of a three-pass softmax left in after the online softmax made it "   \
    "unneeded")                                                                                    \
  X(slow_extra_pass_1_in_2, "makes that pass over one (query tile, key tile) visit in 2",          \
    "slow_extra_pass scaled down, to size the smallest slowdown the gate sees "                    \
    "(scripts/bench_gate.sh --mode sensitivity)")                                                  \
  X(slow_extra_pass_1_in_4, "makes that pass over one (query tile, key tile) visit in 4",          \
    "slow_extra_pass scaled down, as above")                                                       \
  X(slow_extra_pass_1_in_8, "makes that pass over one (query tile, key tile) visit in 8",          \
    "slow_extra_pass scaled down, as above")                                                       \
  X(slow_extra_pass_1_in_12, "makes that pass over one (query tile, key tile) visit in 12",        \
    "slow_extra_pass scaled down, as above")

// Bugs of the backward pass (cpu_flash's, kernels/cpu_flash_backward.cpp, and cuda_flash's at the
// same places, kernels/cuda_flash_backward.cu): they change dQ, dK or dV and leave the forward's
// output as it is, so only a comparison of the gradients shows them.
#define ATTNFUZZ_BACKWARD_PLANTED_BUGS(X)                                                          \
  X(backward_gqa_modulo,                                                                           \
    "adds query head h's part of dK and dV to kv head h % kv_heads, not h / (heads / kv_heads)",   \
    "the GQA reduction of dK and dV written interleaved while the forward groups")                 \
  X(backward_rowsum_dropped, "computes dS = P * dP, leaving out D = rowsum(dO * O)",               \
    "the softmax's Jacobian taken as diagonal: the preprocessing kernel forgotten")                \
  X(backward_rowsum_from_next_row, "computes each row's D = rowsum(dO * O) from the next row's O", \
    "an O pointer advanced one row too far in the preprocessing kernel")                           \
  X(backward_softcap_slope_forgotten, "leaves out the soft cap's derivative 1 - tanh^2",           \
    "the forward's tanh cap not differentiated in the backward")                                   \
  X(backward_mask_not_applied,                                                                     \
    "recomputes P over every key of the sequence, ignoring the causal mask and the window",        \
    "the mask applied in the forward kernel only: masked columns leak gradient")                   \
  X(backward_lse_log2, "reads the natural-log log-sum-exp as a base-2 one in exp2",                \
    "a backward written for a forward that stores log2 of the row sum")                            \
  X(backward_dk_unscaled, "leaves the softmax scale out of dK",                                    \
    "the scale folded into Q for the scores and dQ, then forgotten for dK")                        \
  X(backward_varlen_key_offset,                                                                    \
    "reads packed sequence b's keys from one row before cu_seqlens_k[b] for b > 0",                \
    "an off-by-one in the backward's copy of the varlen offsets")                                  \
  X(backward_dq_last_key_tile_only,                                                                \
    "stores dQ from the last key tile alone, the others' contributions overwritten",               \
    "'=' written for '+=' where dQ gathers the key tiles' parts")

// Bugs of fp8 inputs (core/fp8_inputs.h): how a kernel decodes and descales them. Both flash
// kernels carry them (cuda_flash decodes as it stages its tiles).
#define ATTNFUZZ_FP8_PLANTED_BUGS(X)                                                             \
  X(fp8_k_descale_for_v, "descales the output by K's factor instead of V's",                     \
    "k_scale passed where v_scale belongs: the two are equal in most tests")                     \
  X(fp8_descale_by_query_head,                                                                   \
    "reads the (batch, KV head) descale arrays at [b * kv_heads + query head], wrapping at the " \
    "end",                                                                                       \
    "the factors indexed as a (batch, heads) array, as Q's own shape suggests")                  \
  X(fp8_descale_twice, "applies Q's and K's descale factors to the scores twice",                \
    "the factors folded into the softmax scale by the caller and again by the kernel")           \
  X(fp8_e5m2_read_as_e4m3, "decodes e5m2 inputs as e4m3",                                        \
    "one fp8 decode path for both formats: the format flag ignored")                             \
  X(fp8_p_rounded_to_e4m3,                                                                       \
    "rounds P to e4m3 before P V when V is fp8, where P in the output dtype was declared",       \
    "FlashAttention 3's fp8 P V MMA taken for a kernel that promised 16-bit probabilities")      \
  X(fp8_subnormals_as_normals, "decodes fp8 subnormals with the implicit leading one",           \
    "a hand-written fp8 decoder that adds the hidden bit whatever the exponent field")           \
  X(fp8_dequantized_to_output,                                                                   \
    "dequantizes fp8 inputs into the output dtype, each times its factor, before the products, " \
    "where exact decoding with the factors folded into the scale and the output was declared",   \
    "vLLM's scaled_convert taken for a kernel that promised FlashAttention 3's fp8 numerics")

#define ATTNFUZZ_PLANTED_BUGS(X)         \
  ATTNFUZZ_ALGORITHM_PLANTED_BUGS(X)     \
  ATTNFUZZ_CONTRACT_PLANTED_BUGS(X)      \
  ATTNFUZZ_HOST_CONTRACT_PLANTED_BUGS(X) \
  ATTNFUZZ_CONTAINMENT_PLANTED_BUGS(X)   \
  ATTNFUZZ_RACE_PLANTED_BUGS(X)          \
  ATTNFUZZ_GPU_PLANTED_BUGS(X)           \
  ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(X)   \
  ATTNFUZZ_BACKWARD_PLANTED_BUGS(X) ATTNFUZZ_FP8_PLANTED_BUGS(X)

enum class PlantedBug {
  none,
#define ATTNFUZZ_PLANT_ENUM(id, effect, origin) id,
  ATTNFUZZ_PLANTED_BUGS(ATTNFUZZ_PLANT_ENUM)
#undef ATTNFUZZ_PLANT_ENUM
};

// What proves that a plant is caught: the harness's comparison of outputs, (for a bug of memory or
// time) the containment of a run, (for a race) compute-sanitizer racecheck, (for a slowdown) the
// performance gate's timing, or (for a bug of the backward pass) the comparison of the gradients.
enum class PlantDetector { comparison, containment, racecheck, timing, backward };

struct PlantedBugInfo {
  PlantedBug bug;
  std::string_view name;
  std::string_view effect;
  std::string_view origin;
  PlantDetector detector;
  bool host_only = false;  // planted in the host kernel alone (cuda_flash does not carry it)
};

inline constexpr PlantedBugInfo kPlantedBugs[] = {
#define ATTNFUZZ_PLANT_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::comparison},
#define ATTNFUZZ_HOST_PLANT_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::comparison, true},
#define ATTNFUZZ_CONTAINMENT_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::containment, true},
#define ATTNFUZZ_RACE_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::racecheck},
#define ATTNFUZZ_TIMING_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::timing},
#define ATTNFUZZ_BACKWARD_ROW(id, effect, origin) \
  {PlantedBug::id, #id, effect, origin, PlantDetector::backward},
    ATTNFUZZ_ALGORITHM_PLANTED_BUGS(ATTNFUZZ_PLANT_ROW)           //
    ATTNFUZZ_CONTRACT_PLANTED_BUGS(ATTNFUZZ_PLANT_ROW)            //
    ATTNFUZZ_HOST_CONTRACT_PLANTED_BUGS(ATTNFUZZ_HOST_PLANT_ROW)  //
    ATTNFUZZ_CONTAINMENT_PLANTED_BUGS(ATTNFUZZ_CONTAINMENT_ROW)   //
    ATTNFUZZ_RACE_PLANTED_BUGS(ATTNFUZZ_RACE_ROW)                 //
    ATTNFUZZ_GPU_PLANTED_BUGS(ATTNFUZZ_PLANT_ROW)                 //
    ATTNFUZZ_PERFORMANCE_PLANTED_BUGS(ATTNFUZZ_TIMING_ROW)        //
    ATTNFUZZ_BACKWARD_PLANTED_BUGS(ATTNFUZZ_BACKWARD_ROW)         //
    ATTNFUZZ_FP8_PLANTED_BUGS(ATTNFUZZ_PLANT_ROW)
#undef ATTNFUZZ_PLANT_ROW
#undef ATTNFUZZ_HOST_PLANT_ROW
#undef ATTNFUZZ_CONTAINMENT_ROW
#undef ATTNFUZZ_RACE_ROW
#undef ATTNFUZZ_TIMING_ROW
#undef ATTNFUZZ_BACKWARD_ROW
};

inline std::optional<PlantedBug> parse_planted_bug(std::string_view name) {
  if (name == "none") return PlantedBug::none;
  for (const PlantedBugInfo& info : kPlantedBugs) {
    if (info.name == name) return info.bug;
  }
  return std::nullopt;
}

// The plant's row of the catalogue (`bug` is not none).
inline const PlantedBugInfo& planted_bug_info(PlantedBug bug) {
  return kPlantedBugs[static_cast<int>(bug) - 1];
}

inline std::string_view planted_bug_name(PlantedBug bug) {
  return bug == PlantedBug::none ? "none" : kPlantedBugs[static_cast<int>(bug) - 1].name;
}

}  // namespace attnfuzz
