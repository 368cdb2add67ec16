// SPDX-License-Identifier: BSD-3-Clause
#include "run/kernel_inputs.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/number_text.h"

namespace attnfuzz {
namespace {

// The first index where `before` and `after` differ bitwise, if any (sizes are equal: the handed
// arrays are copies).
template <typename Element>
std::optional<std::size_t> first_difference(std::span<const Element> before,
                                            std::span<const Element> after) {
  if (before.size() == after.size() &&
      std::memcmp(before.data(), after.data(), before.size_bytes()) == 0) {
    return std::nullopt;
  }
  const auto [at_before, at_after] = std::mismatch(
      before.begin(), before.end(), after.begin(), after.end(),
      [](const Element& a, const Element& b) { return std::memcmp(&a, &b, sizeof(Element)) == 0; });
  return static_cast<std::size_t>(at_before - before.begin());
}

std::string hex_bits(std::uint16_t bits) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x", bits);
  return text;
}

std::string element_text(std::uint16_t bits, Dtype dtype) {
  return hex_bits(bits) + " (" + significant_digits(dtype_to_float(bits, dtype), 6) + ")";
}

// A tensor input's change: element `index` of a buffer whose tensor spans `span` elements (the
// rest is its guard tail).
std::string tensor_change(std::string_view name, std::size_t index, std::int64_t span,
                          std::uint16_t before, std::uint16_t after, Dtype dtype) {
  const bool in_tail = static_cast<std::int64_t>(index) >= span;
  return "the kernel changed its input " + std::string(name) + " (inputs must be left as they " +
         "were): element " + std::to_string(index) +
         (in_tail ? " (past the tensor's " + std::to_string(span) + " elements, in its guard tail)"
                  : "") +
         " was " + element_text(before, dtype) + ", is " + element_text(after, dtype);
}

template <typename Element>
std::string array_change(std::string_view name, std::size_t index, Element before, Element after) {
  const auto text = [](Element value) {
    if constexpr (std::is_floating_point_v<Element>)
      return significant_digits(value, 9);
    else
      return std::to_string(value);
  };
  return "the kernel changed its input " + std::string(name) +
         " (inputs must be left as they were): [" + std::to_string(index) + "] was " +
         text(before) + ", is " + text(after);
}

}  // namespace

KernelInputs KernelInputs::copy_of(const AttentionProblem& problem, const AttentionInputs& inputs) {
  KernelInputs copies;
  const auto copy = [](auto& copy, const auto& original, std::string_view name, std::size_t span) {
    copy = std::remove_reference_t<decltype(copy)>(std::span(original));
    copy.label(name, 0, span);
  };
  copy(copies.q, inputs.q, "the input Q", static_cast<std::size_t>(q_span(problem)));
  copy(copies.k, inputs.k, "the input K", static_cast<std::size_t>(k_span(problem)));
  copy(copies.v, inputs.v, "the input V", static_cast<std::size_t>(v_span(problem)));
  copy(copies.cu_seqlens_q, problem.cu_seqlens_q, "the input cu_seqlens_q",
       problem.cu_seqlens_q.size());
  copy(copies.cu_seqlens_k, problem.cu_seqlens_k, "the input cu_seqlens_k",
       problem.cu_seqlens_k.size());
  copy(copies.block_table, problem.block_table, "the input block_table",
       problem.block_table.size());
  copy(copies.alibi_slopes, problem.alibi_slopes, "the input alibi_slopes",
       problem.alibi_slopes.size());
  copy(copies.q_descale, inputs.q_descale, "the input q_descale", inputs.q_descale.size());
  copy(copies.k_descale, inputs.k_descale, "the input k_descale", inputs.k_descale.size());
  copy(copies.v_descale, inputs.v_descale, "the input v_descale", inputs.v_descale.size());
  return copies;
}

AttentionTensors KernelInputs::bind(std::uint16_t* output, float* lse) const {
  const auto data_or_null = [](const auto& array) {
    return array.empty() ? nullptr : array.data();
  };
  AttentionTensors bound{q.data(), k.data(), v.data(), output};
  bound.cu_seqlens_q = data_or_null(cu_seqlens_q);
  bound.cu_seqlens_k = data_or_null(cu_seqlens_k);
  bound.block_table = data_or_null(block_table);
  bound.alibi_slopes = data_or_null(alibi_slopes);
  bound.q_descale = data_or_null(q_descale);
  bound.k_descale = data_or_null(k_descale);
  bound.v_descale = data_or_null(v_descale);
  bound.q_elements = q.size();
  bound.k_elements = k.size();
  bound.v_elements = v.size();
  bound.lse = lse;
  return bound;
}

std::optional<std::string> find_changed_input(const AttentionProblem& problem,
                                              const AttentionInputs& original,
                                              const KernelInputs& handed) {
  const struct {
    std::string_view name;
    std::span<const std::uint16_t> before;
    const FencedBuffer<std::uint16_t>& after;
    std::int64_t span;
    Dtype dtype;
  } tensors[] = {{"Q", original.q, handed.q, q_span(problem), problem.q_dtype()},
                 {"K", original.k, handed.k, k_span(problem), problem.k_dtype()},
                 {"V", original.v, handed.v, v_span(problem), problem.v_dtype()}};
  for (const auto& tensor : tensors) {
    if (const auto index = first_difference<std::uint16_t>(tensor.before, tensor.after)) {
      return tensor_change(tensor.name, *index, tensor.span, tensor.before[*index],
                           tensor.after[*index], tensor.dtype);
    }
  }
  const struct {
    std::string_view name;
    std::span<const std::int32_t> before;
    const FencedBuffer<std::int32_t>& after;
  } index_arrays[] = {{"cu_seqlens_q", problem.cu_seqlens_q, handed.cu_seqlens_q},
                      {"cu_seqlens_k", problem.cu_seqlens_k, handed.cu_seqlens_k},
                      {"block_table", problem.block_table, handed.block_table}};
  for (const auto& array : index_arrays) {
    if (const auto index = first_difference<std::int32_t>(array.before, array.after)) {
      return array_change(array.name, *index, array.before[*index], array.after[*index]);
    }
  }
  const struct {
    std::string_view name;
    std::span<const float> before;
    const FencedBuffer<float>& after;
  } float_arrays[] = {{"alibi_slopes", problem.alibi_slopes, handed.alibi_slopes},
                      {"q_descale", original.q_descale, handed.q_descale},
                      {"k_descale", original.k_descale, handed.k_descale},
                      {"v_descale", original.v_descale, handed.v_descale}};
  for (const auto& array : float_arrays) {
    if (const auto index = first_difference<float>(array.before, array.after)) {
      return array_change(array.name, *index, array.before[*index], array.after[*index]);
    }
  }
  // Past the guard tails, short of the fences: a write that skipped the tail.
  const struct {
    std::string_view name;
    std::optional<std::ptrdiff_t> byte;
  } slacks[] = {{"Q", handed.q.first_changed_slack_byte()},
                {"K", handed.k.first_changed_slack_byte()},
                {"V", handed.v.first_changed_slack_byte()},
                {"cu_seqlens_q", handed.cu_seqlens_q.first_changed_slack_byte()},
                {"cu_seqlens_k", handed.cu_seqlens_k.first_changed_slack_byte()},
                {"block_table", handed.block_table.first_changed_slack_byte()},
                {"alibi_slopes", handed.alibi_slopes.first_changed_slack_byte()},
                {"q_descale", handed.q_descale.first_changed_slack_byte()},
                {"k_descale", handed.k_descale.first_changed_slack_byte()},
                {"v_descale", handed.v_descale.first_changed_slack_byte()}};
  for (const auto& slack : slacks) {
    if (slack.byte) {
      return "the kernel wrote outside its input " + std::string(slack.name) + ": byte " +
             std::to_string(*slack.byte >= 0 ? *slack.byte : -*slack.byte) +
             (*slack.byte >= 0 ? " past its buffer's end (beyond its guard tail)"
                               : " before its buffer's start");
    }
  }
  return std::nullopt;
}

}  // namespace attnfuzz
