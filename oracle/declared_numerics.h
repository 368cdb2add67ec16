// SPDX-License-Identifier: BSD-3-Clause
// What a kernel declares it does differently from the locked numerics, so that it is judged by its
// own: the dtype its P·V accumulator and row sum are kept in, when not fp32, and how many keys it
// sums in fp32 between two roundings of that accumulator (fuzz_attention --accumulation fp16,
// fp16/64, input/16); and the dtype it rounds P to before P·V, when not the output's
// (--probabilities e4m3, or v: V's storage dtype, as FlashAttention 3's fp8 path); and the 16-bit
// dtype it dequantizes fp8 inputs into, each element times its factor rounded before the products,
// when it does not decode them exactly and fold the factors into the scale and the output
// (--dequantize-to output, as vLLM's scaled_convert). Every bound follows from it
// (docs/tolerance.md, "Declared numerics"); nothing is loosened by hand.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/attention_problem.h"
#include "core/dtype.h"

namespace attnfuzz {

// Keys per rounding above this are a typo: no kernel holds a longer row in fp32 between roundings.
inline constexpr std::int64_t kMaxKeysPerRounding = 1 << 20;

struct DeclaredNumerics {
  std::optional<Dtype> accumulation;  // nullopt: fp32, the locked numerics (unless follows_input)
  bool follows_input = false;         // "input": the accumulator has each case's input dtype
  // With an accumulation dtype: the accumulator is rounded at most twice (an addition, a rescale)
  // per this many keys, summed in fp32 in between (an MMA's k, a tile); 1: every addition.
  std::int64_t keys_per_rounding = 1;
  std::optional<Dtype> probabilities;       // nullopt: P in the output dtype (unless follows_value)
  bool probabilities_follow_value = false;  // "v": P in V's storage dtype
  // fp8 inputs dequantized into this 16-bit dtype (each element times its factor, rounded) before
  // the products; nullopt: decoded exactly, the factors folded in fp32 (unless to_output).
  std::optional<Dtype> dequantized_to;
  bool dequantized_to_output = false;  // "output": into each case's output dtype

  bool accumulation_declared() const { return follows_input || accumulation.has_value(); }
  bool probabilities_declared() const {
    return probabilities_follow_value || probabilities.has_value();
  }
  bool dequantization_declared() const {
    return dequantized_to_output || dequantized_to.has_value();
  }
  bool declared() const {
    return accumulation_declared() || probabilities_declared() || dequantization_declared();
  }
  // The dtype fp8 inputs of a case of this shape are dequantized into; nullopt: none (exact).
  std::optional<Dtype> dequantization_dtype(const ProblemShape& problem) const {
    return dequantized_to_output ? std::optional<Dtype>(problem.dtype) : dequantized_to;
  }
  // u of that rounding for a tensor stored as `storage`: 0 where none happens (a 16-bit tensor, or
  // no dequantization declared).
  double dequantization_unit_roundoff(const ProblemShape& problem, InputStorage storage) const {
    const std::optional<Dtype> dtype = dequantization_dtype(problem);
    return dtype && storage != InputStorage::same ? traits_of(*dtype).unit_roundoff() : 0.0;
  }
  // eta of that rounding (half the dtype's smallest subnormal), 0 where none happens.
  double dequantization_half_subnormal(const ProblemShape& problem, InputStorage storage) const {
    const std::optional<Dtype> dtype = dequantization_dtype(problem);
    return dtype && storage != InputStorage::same ? traits_of(*dtype).min_subnormal / 2.0 : 0.0;
  }
  // What a row norm of a tensor stored as `storage` is padded by for that rounding: an element's
  // error u |x| + eta is at most u (|x| + eta / u), u times that of a row whose every element is
  // eta / u larger in magnitude, whose norm is at most |x| + sqrt(D) eta / u (docs/tolerance.md).
  double dequantization_norm_padding(const ProblemShape& problem, InputStorage storage) const {
    const double unit_roundoff = dequantization_unit_roundoff(problem, storage);
    if (unit_roundoff == 0.0) return 0.0;
    return std::sqrt(static_cast<double>(problem.head_dim)) *
           dequantization_half_subnormal(problem, storage) / unit_roundoff;
  }
  // The dtype P is rounded to before P·V in a case of this shape.
  Dtype probability_dtype(const ProblemShape& problem) const {
    return probabilities_follow_value ? problem.v_dtype() : probabilities.value_or(problem.dtype);
  }
  // The accumulator's dtype for a case of `input` dtype; nullopt: fp32.
  std::optional<Dtype> accumulator_for(Dtype input) const {
    return follows_input ? std::optional<Dtype>(input) : accumulation;
  }
  // u of the accumulator: fp32's 2^-24, or the declared dtype's.
  double accumulation_unit_roundoff(Dtype input) const {
    const std::optional<Dtype> dtype = accumulator_for(input);
    return dtype ? traits_of(*dtype).unit_roundoff() : kFloat32UnitRoundoff;
  }
  // Half the accumulator's smallest subnormal: the absolute error of one rounding below its
  // normal range.
  double accumulation_half_subnormal(Dtype input) const {
    const std::optional<Dtype> dtype = accumulator_for(input);
    return dtype ? traits_of(*dtype).min_subnormal / 2.0 : 0x1p-150;
  }
};

// As --accumulation takes it: "fp32", "fp16" (every addition rounded), "fp16/64", "input/16".
inline std::string accumulation_name(const DeclaredNumerics& numerics) {
  if (!numerics.accumulation_declared()) return "fp32";
  const std::string dtype(numerics.follows_input ? "input" : dtype_name(*numerics.accumulation));
  return numerics.keys_per_rounding == 1 ? dtype
                                         : dtype + "/" + std::to_string(numerics.keys_per_rounding);
}

// The numerics --accumulation declares: fp32, or ACCUMULATOR[/KEYS] with ACCUMULATOR fp16, bf16 or
// input (each case's input dtype) and KEYS from 1 to kMaxKeysPerRounding; nullopt for anything
// else.
inline std::optional<DeclaredNumerics> parse_accumulation(std::string_view text) {
  if (text == "fp32") return DeclaredNumerics{};
  const std::size_t slash = text.find('/');
  const std::string_view accumulator = text.substr(0, slash);
  DeclaredNumerics numerics;
  numerics.follows_input = accumulator == "input";
  if (!numerics.follows_input) {
    numerics.accumulation = parse_dtype(accumulator);
    if (!numerics.accumulation || !holds_outputs(*numerics.accumulation)) return std::nullopt;
  }
  if (slash == std::string_view::npos) return numerics;
  const std::string_view keys = text.substr(slash + 1);
  const auto [end, error] =
      std::from_chars(keys.data(), keys.data() + keys.size(), numerics.keys_per_rounding);
  if (error != std::errc() || end != keys.data() + keys.size() || numerics.keys_per_rounding < 1 ||
      numerics.keys_per_rounding > kMaxKeysPerRounding) {
    return std::nullopt;
  }
  return numerics;
}

// As --probabilities takes it: "output" (the locked numerics), "v", or a dtype's name.
inline std::string probabilities_name(const DeclaredNumerics& numerics) {
  if (numerics.probabilities_follow_value) return "v";
  return numerics.probabilities ? std::string(dtype_name(*numerics.probabilities)) : "output";
}

// `numerics` with the P dtype --probabilities declares: output, v or any dtype's name (fp16, bf16,
// e4m3, e5m2); nullopt for anything else.
inline std::optional<DeclaredNumerics> parse_probabilities(std::string_view text,
                                                           DeclaredNumerics numerics) {
  numerics.probabilities.reset();
  numerics.probabilities_follow_value = text == "v";
  if (text == "output" || text == "v") return numerics;
  numerics.probabilities = parse_dtype(text);
  if (!numerics.probabilities) return std::nullopt;
  return numerics;
}

// As --dequantize-to takes it: "none" (exact decoding, the factors folded), "output" or a 16-bit
// dtype's name.
inline std::string dequantization_name(const DeclaredNumerics& numerics) {
  if (numerics.dequantized_to_output) return "output";
  return numerics.dequantized_to ? std::string(dtype_name(*numerics.dequantized_to)) : "none";
}

// `numerics` with the dtype --dequantize-to declares: none, output or a dtype that holds outputs
// (fp16, bf16); nullopt for anything else.
inline std::optional<DeclaredNumerics> parse_dequantization(std::string_view text,
                                                            DeclaredNumerics numerics) {
  numerics.dequantized_to.reset();
  numerics.dequantized_to_output = text == "output";
  if (text == "none" || text == "output") return numerics;
  numerics.dequantized_to = parse_dtype(text);
  if (!numerics.dequantized_to || !holds_outputs(*numerics.dequantized_to)) return std::nullopt;
  return numerics;
}

}  // namespace attnfuzz
