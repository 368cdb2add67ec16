// SPDX-License-Identifier: BSD-3-Clause
// Cases as bytes and as JSON: the one case model that the matrix runner, the property engine,
// libFuzzer and replay all share.
//
// Binary form (version 1), little endian, the simplest choices last to go:
//   "AFZ" 0x01 | seq_len_q-1 u16 | seq_len_k-1 u16 |
//   flags u8 (1 causal, 2 bhsd, bits 2 and up the placement's index, wrapping) | batch-1 u8 |
//   kv_heads-1 u8 | group-1 u8 | head_dim index u8 | dtype u8 | row_padding u8 | data u8 |
//   seed u64 | injection kind u8 | injection tensor u8 | injection count-1 u8 |
//   softmax scale f64 (0: 1/sqrt(head_dim)) | kernel name length u8 | kernel name
// Version 2 (a case with any variant, or the backward pass) puts before the kernel name's length:
//   variant flags u8 (1 alibi, 2 return_lse, 4 varlen q, 8 varlen k, 16 backward, 32 fp8 inputs) |
//   page_size u16 |
//   window_left+1 u16 | window_right+1 u16 | softcap*16 u16 |
//   per-sequence query lengths u16 x batch (varlen q) | key lengths u16 x batch (varlen k)
// each length wrapping into 0 .. seq_len; and, with variant flag 32, after the kernel name, the
// last byte: fp8 inputs u8 (two bits each for Q's, K's and V's storage, 0 the case's dtype,
// 1 e4m3, 2 e5m2, then the descale form, 0 none, 1 per tensor, 2 per KV head; 3 wraps). An input
// flagged but ending at its name has none (as an earlier build's, whose flag 32 meant nothing).
// Version 3 (a batch over 8 or seq_len_q over 16384: a shape past CUDA's grid limits) is version 2
// with batch-1 u24 | seq_len_q-1 u24 after the softcap, which replace the narrow fields (written as
// 0), and its sequence lengths u24 each.
// An input may stop anywhere after the version: the fields it leaves out take their defaults
// (seq_len_k = seq_len_q, one head, batch 1, head_dim 64, fp16, normal data, seed 0, nothing
// injected, the default scale and kernel), so cutting bytes off the end simplifies a case, which is
// what libFuzzer's -minimize_crash does. Every field maps into its valid range (a value past the
// end of a table wraps around), so almost every mutation of a valid input is again a valid case.
// A shape whose work is over the cap (case/work_cap.h, 2^24) is fitted under it as
// fit_to_work_cap does (batch first, then heads, then lengths, keeping tail tiles): decoding is
// size-aware, so large shapes reach libFuzzer made smaller rather than not at all, and a crash file
// replays as the fitted case that failed. Only a wrong magic or version, an unusable scale, or a
// kernel name longer than the bytes left or with odd characters is rejected, with a message;
// decode_any_bytes reads those too (libFuzzer's mutator writes what it reads back exactly, so that
// every mutation it runs, and every crash file, is a case decode_case reads).
// Encoding writes every field and refuses a case over the cap (fit it first), so
// decode(encode(c)) == c for every case the binary form can hold.
//
// JSON form: the case's keys as a matrix file writes them, wrapped in a one-case matrix, so a
// saved case is also a matrix file: `fuzz_attention --configs saved.json` runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case/attention_case.h"
#include "case/work_cap.h"

namespace attnfuzz {

inline constexpr std::uint8_t kCaseEncodingVersion = 1;
// Version 2: version 1's fields, then the variants (written only for a case that has any).
inline constexpr std::uint8_t kCaseEncodingVersionWithVariants = 2;
// Version 3: version 2's fields, then the wide extents: a batch and a seq_len_q past version 2's
// limits, its sequence lengths three bytes each (written only for a case that needs them: a shape
// past CUDA's grid limits).
inline constexpr std::uint8_t kCaseEncodingVersionWide = 3;
inline constexpr char kCaseMagic[] = {'A', 'F', 'Z'};

// Limits of the binary form (a matrix file can describe larger cases).
inline constexpr std::int64_t kEncodedMaxBatch = 8;
inline constexpr std::int64_t kEncodedMaxKvHeads = 8;
inline constexpr std::int64_t kEncodedMaxGroup = 8;
inline constexpr std::int64_t kEncodedMaxSeqLen = 16384;
// Version 3's wide extents (three bytes each); the work cap bounds what a case of them costs.
inline constexpr std::int64_t kEncodedMaxWideBatch = std::int64_t{1} << 20;
inline constexpr std::int64_t kEncodedMaxWideSeqLenQ = std::int64_t{1} << 20;
inline constexpr std::int64_t kEncodedMaxRowPadding = 16;
inline constexpr std::int64_t kEncodedMaxInjections = 16;
// Head dims the binary form can name: every tile configuration, and four that no built-in kernel
// supports but a plugin may (new ones go at the end: an index names a head dim).
inline constexpr std::int64_t kEncodedHeadDims[] = {64, 32, 96, 128, 256, 80, 16, 160, 192};

// Whether `bytes` start with the binary form's magic "AFZ" (whatever the version).
bool starts_with_case_magic(std::span<const std::uint8_t> bytes);

// Bytes of a case; nullopt (with `why`) when a field is outside the binary form's limits.
std::optional<std::vector<std::uint8_t>> encode_case(const AttentionCase& attention_case,
                                                     std::string* why = nullptr);

// The case in `bytes`, or nullopt with the reason in `why`. The case's id is left empty.
// `fitted`, when given, says whether the shape was over the work cap and fitted under it.
std::optional<AttentionCase> decode_case(std::span<const std::uint8_t> bytes,
                                         std::string* why = nullptr, bool* fitted = nullptr);

// Any bytes as a case, for libFuzzer's mutations: bytes decode_case reads decode as it reads them;
// of the others, a wrong magic or version leaves the fields where they would be (the version modulo
// 3 choosing the form: 1 or 2 as named, 0 the wide form 3), an unusable scale is folded into 2^-8
// .. 2^8 times 1/sqrt(head_dim), and a kernel name that does not fill the bytes left, or has odd
// characters, gives the default kernel. `repaired` says whether any of that happened.
AttentionCase decode_any_bytes(std::span<const std::uint8_t> bytes, bool* fitted = nullptr,
                               bool* repaired = nullptr);

// The bytes of a whole case in the binary form, but for its kernel name.
inline constexpr std::size_t kWholeCaseMinBytes = 36;

// The first field of the binary form that `bytes` (a case starting with the magic) end before, or
// nullopt when every field is there. That field and the ones after it decode to their defaults:
// libFuzzer's minimized inputs are cut short this way on purpose, but so is a file that lost its
// end in a copy, and a reader of case files says so rather than run another case in silence.
std::optional<std::string> first_field_cut_off(std::span<const std::uint8_t> bytes);

// {"batch": ..., "heads": ..., ...}: the key of every field of the case schema
// (case/case_schema.h) with this case's value, but for values that mean "not chosen" (the default
// scale, kernel and injection). A matrix file reads it back as the same case.
nlohmann::json case_keys_to_json(const AttentionCase& attention_case);

// The case `keys` describes, in case_keys_to_json's form: each field under its own key (no
// shorthands or aliases), absent ones at their defaults. The id is left empty. Throws
// std::invalid_argument naming the key that is unknown or whose value is unusable. How a worker
// process receives the case it must run; a matrix file is read by matrix/matrix_file.h instead.
AttentionCase case_from_keys_json(const nlohmann::json& keys);

// A one-case matrix file named `name` holding the case: its JSON form.
std::string case_to_matrix_text(const AttentionCase& attention_case, const std::string& name);

// A matrix file named `name` holding `cases`, in their order: one JSON document.
std::string cases_to_matrix_text(const std::vector<AttentionCase>& cases, const std::string& name);

}  // namespace attnfuzz
