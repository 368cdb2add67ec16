// SPDX-License-Identifier: BSD-3-Clause
// The fields of a case, declared once. Every form of a case comes from this table: the struct
// (case/attention_case.h), the keys of matrix and case files (matrix/matrix_file.cpp), the JSON
// writer (case/case_codec.cpp), a report's `config` (run/case_result_json.cpp), the validity check
// of accepted cases (matrix/matrix_parse_check.cpp) and the problem a kernel gets (problem_of, and
// through it the plugin ABI's problem). tests/case/test_case_schema.cpp walks the table and checks
// each of them against it. Adding a field is one row here, plus its meaning where it is used.
//
// FIELD(member, Codec, key, default value, use)
//   member   the AttentionCase member
//   Codec    how its value reads from JSON (with its limits) and writes back (below)
//   key      its name in matrix files, case files and a report's config
//   default  its value when no layer of a matrix file sets it
//   use      what it changes (CaseFieldUse): the problem, the layout, the data, the kernel, the
//            passes that run, or how the inputs are stored (fp8)
// SHORTHAND(key, first member, second member): a key that sets two fields at once, applied before
// the keys of those fields (so that "seq_len" with "seq_len_k" sets a longer key length).
// ALIAS(key, member): another name of a field's key, the earlier harness's name in reports. A
// case may carry both (a report's config does); they must then hold the same value.
//
// The order of the rows is the order in which keys apply within one object and in which a matrix's
// arrays expand (the last fastest): reordering them renumbers cases of existing matrix files.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "case/data_distribution.h"
#include "core/attention_problem.h"
#include "core/dtype.h"
#include "core/fp8_inputs.h"

#define ATTNFUZZ_CASE_FIELDS(FIELD, SHORTHAND, ALIAS)                        \
  FIELD(batch, PositiveInteger, "batch", 1, problem)                         \
  ALIAS("batch_size", batch)                                                 \
  FIELD(heads, PositiveInteger, "heads", 1, problem)                         \
  ALIAS("num_heads", heads)                                                  \
  FIELD(kv_heads, PositiveInteger, "kv_heads", 1, problem)                   \
  SHORTHAND("seq_len", seq_len_q, seq_len_k)                                 \
  FIELD(seq_len_q, PositiveInteger, "seq_len_q", 1, problem)                 \
  FIELD(seq_len_k, PositiveInteger, "seq_len_k", 1, problem)                 \
  FIELD(head_dim, PositiveInteger, "head_dim", 64, problem)                  \
  FIELD(dtype, DtypeName, "dtype", Dtype::fp16, problem)                     \
  FIELD(causal, Boolean, "causal", false, problem)                           \
  FIELD(data, DistributionName, "data", DataDistribution::normal, data)      \
  FIELD(seed, Seed, "seed", 1, data)                                         \
  FIELD(kernel, KernelName, "kernel", "", kernel)                            \
  FIELD(layout, LayoutName, "layout", Layout::bshd, layout)                  \
  FIELD(row_padding, NonNegativeInteger, "row_padding", 0, layout)           \
  FIELD(placement, PlacementName, "placement", Placement::shared, layout)    \
  FIELD(softmax_scale, OptionalScale, "softmax_scale", 0.0, problem)         \
  FIELD(injection, InjectionText, "inject", SpecialValueInjection{}, data)   \
  FIELD(seq_lens_q, SequenceLengths, "seq_lens_q", {}, problem)              \
  FIELD(seq_lens_k, SequenceLengths, "seq_lens_k", {}, problem)              \
  FIELD(page_size, OptionalCount, "page_size", 0, problem)                   \
  FIELD(window_left, WindowExtent, "window_left", -1, problem)               \
  FIELD(window_right, WindowExtent, "window_right", -1, problem)             \
  FIELD(softcap, SoftcapValue, "softcap", 0.0, problem)                      \
  FIELD(alibi, OptionalFlag, "alibi", false, problem)                        \
  FIELD(return_lse, OptionalFlag, "return_lse", false, problem)              \
  FIELD(backward, OptionalFlag, "backward", false, passes)                   \
  FIELD(q_storage, InputStorageName, "q_dtype", InputStorage::same, storage) \
  FIELD(k_storage, InputStorageName, "k_dtype", InputStorage::same, storage) \
  FIELD(v_storage, InputStorageName, "v_dtype", InputStorage::same, storage) \
  FIELD(descale, DescaleName, "descale", Descale::none, storage)

#define ATTNFUZZ_CASE_IGNORE(...)

namespace attnfuzz {

// The fields by name: an index into per-field arrays (where each value came from, for messages).
enum class CaseField : std::uint8_t {
#define ATTNFUZZ_CASE_FIELD_ENUM(member, Codec, key, value, use) member,
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_FIELD_ENUM, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_CASE_FIELD_ENUM
};
inline constexpr std::size_t kCaseFieldCount = 0
#define ATTNFUZZ_CASE_FIELD_COUNT(member, Codec, key, value, use) +1
    ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_FIELD_COUNT, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_CASE_FIELD_COUNT
    ;

// What a field changes when it changes: the problem a kernel sees, the tensors' layout in memory,
// the input data, which kernel runs, or which of its passes run (the forward alone, or the
// backward after it). tests/case/test_case_schema.cpp checks each field's claim.
// `storage`: problem fields that say how the inputs are stored (fp8 formats, descale factors);
// they reach the problem and plugin ABI version 4's problem (abi_problem_v4_of), not version 2's:
// a feature (fp8_inputs) that only a version 4 plugin can declare.
enum class CaseFieldUse : std::uint8_t { problem, layout, data, kernel, passes, storage };

// ---- codecs: a field's JSON form and limits ----
//
// Each codec has
//   Value                                   the member's type
//   read(json) -> Value                     throws FieldProblem when the value is of the wrong type
//                                           or outside the limits
//   write(Value) -> json                    what read() reads back as the same value
//   outside_limits(Value) -> optional text  why a value is not one a case may hold (for values that
//                                           did not come through read(): decoded, generated)
//   unset(Value) -> bool                    the value means "not chosen" and is left out of JSON

// A problem with one field's value; whoever reads it adds the file, the case and the field.
struct FieldProblem {
  std::string message;
};

// "string \"six\"", "number 3.5", "boolean true": what a JSON value is, for messages.
std::string describe_json_value(const nlohmann::json& value);

namespace case_codec_detail {
std::int64_t read_int64(const nlohmann::json& value, const char* expected);
// `name` among `names` (a table's name column), or FieldProblem "unknown <what> ... (expected one
// of a, b)".
[[noreturn]] void unknown_name(std::string_view what, const std::string& name,
                               const std::string& expected);
}  // namespace case_codec_detail

struct PositiveInteger {
  using Value = std::int64_t;
  static Value read(const nlohmann::json& json) {
    const Value value = case_codec_detail::read_int64(json, "a positive integer");
    if (value <= 0) throw FieldProblem{"must be a positive integer, got " + std::to_string(value)};
    return value;
  }
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value value) {
    if (value > 0) return std::nullopt;
    return std::to_string(value) + " (not positive)";
  }
  static bool unset(Value) { return false; }
};

struct NonNegativeInteger {
  using Value = std::int64_t;
  static Value read(const nlohmann::json& json) {
    const Value value = case_codec_detail::read_int64(json, "a non-negative integer");
    if (value < 0) {
      throw FieldProblem{"must be a non-negative integer, got " + std::to_string(value)};
    }
    return value;
  }
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value value) {
    if (value >= 0) return std::nullopt;
    return std::to_string(value) + " (negative)";
  }
  static bool unset(Value) { return false; }
};

// A non-negative integer whose 0 means "off" and is left out of JSON (page_size).
struct OptionalCount : NonNegativeInteger {
  static bool unset(Value value) { return value == 0; }
};

// Any uint64; JSON integers above int64's range included.
struct Seed {
  using Value = std::uint64_t;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value) { return std::nullopt; }
  static bool unset(Value) { return false; }
};

struct Boolean {
  using Value = bool;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value) { return std::nullopt; }
  static bool unset(Value) { return false; }
};

// A switch that is off by default and left out of JSON when off (alibi, return_lse).
struct OptionalFlag : Boolean {
  static bool unset(Value value) { return !value; }
};

// A kernel's name; empty: the backend's default kernel.
struct KernelName {
  using Value = std::string;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(const Value& value) { return value; }
  static std::optional<std::string> outside_limits(const Value&) { return std::nullopt; }
  static bool unset(const Value& value) { return value.empty(); }
};

// A finite scale > 0; 0 (never read from a file) means 1/sqrt(head_dim).
struct OptionalScale {
  using Value = double;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value value) { return value == 0.0; }
};

struct DtypeName {
  using Value = Dtype;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(dtype_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value) { return false; }
};

struct DistributionName {
  using Value = DataDistribution;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(distribution_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value) { return false; }
};

struct LayoutName {
  using Value = Layout;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(layout_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value) { return false; }
};

// How the tensors are placed relative to one another (core/attention_problem.h); "shared", the
// default, is left out of JSON.
struct PlacementName {
  using Value = Placement;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(placement_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value value) { return value == Placement::shared; }
};

// Per-sequence lengths of a packed (varlen) batch, written as one string of comma-separated
// non-negative integers, "512,0,1,77" (a JSON array would be a matrix axis); "" or absent: every
// sequence is seq_len_q (seq_len_k) long. Each length fits in int32 (FlashAttention's cu_seqlens).
struct SequenceLengths {
  using Value = std::vector<std::int64_t>;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(const Value& value);
  static std::optional<std::string> outside_limits(const Value& value);
  static bool unset(const Value& value) { return value.empty(); }
};

// One side of a sliding window: a number of keys >= 0, or -1 for no limit.
struct WindowExtent {
  using Value = std::int64_t;
  static Value read(const nlohmann::json& json) {
    const Value value = case_codec_detail::read_int64(json, "an integer >= -1");
    if (value < -1)
      throw FieldProblem{"must be -1 (no limit) or >= 0, got " + std::to_string(value)};
    return value;
  }
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value value) {
    if (value >= -1) return std::nullopt;
    return std::to_string(value) + " (below -1)";
  }
  static bool unset(Value value) { return value == -1; }
};

// A soft-capping value: 0 (off), or a cap c from 2^-60 to 2^60. Kernels compute c * tanh(s / c)
// in fp32. Above 2^60, s / c of a score below 2^-66 in magnitude underflows (or is flushed to
// zero) where the capped score should be about s; below 2^-60, s / c overflows to infinity for a
// score beyond 2^68. Inside the range neither happens to a score a case can have, or only to one
// so small that its error is far below any bound; outside it, correct kernels would fail, and a
// cap beyond fp32's range (1e300, 1e-300) would make every capped score NaN. docs/matrix.md says
// so.
struct SoftcapValue {
  using Value = double;
  static constexpr double kSmallest = 0x1p-60;
  static constexpr double kLargest = 0x1p60;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return value; }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value value) { return value == 0.0; }
};

// How an input tensor is stored (core/fp8_inputs.h): "same" (the case's dtype; the default, left
// out of JSON) or an fp8 format's name.
struct InputStorageName {
  using Value = InputStorage;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(input_storage_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value value) { return value == InputStorage::same; }
};

// How the fp8 inputs are descaled (core/fp8_inputs.h); "none", the default, is left out of JSON.
struct DescaleName {
  using Value = Descale;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(Value value) { return std::string(descale_name(value)); }
  static std::optional<std::string> outside_limits(Value value);
  static bool unset(Value value) { return value == Descale::none; }
};

// "none" or "<q|k|v>:<kind>:<count>" (case/data_distribution.h).
struct InjectionText {
  using Value = SpecialValueInjection;
  static Value read(const nlohmann::json& json);
  static nlohmann::json write(const Value& value) { return format_injection(value); }
  static std::optional<std::string> outside_limits(const Value& value);
  static bool unset(const Value& value) { return value.value == SpecialValue::none; }
};

}  // namespace attnfuzz
