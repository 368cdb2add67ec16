// SPDX-License-Identifier: BSD-3-Clause
// One case the harness runs: a problem, the recipe of its data, and the kernel to test. Everything
// a case needs to reproduce is here; matrix files, reports and replay all speak in these fields,
// which are declared once, in case/case_schema.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "case/case_schema.h"
#include "case/data_distribution.h"
#include "core/attention_problem.h"

namespace attnfuzz {

struct AttentionCase {
  std::string id;  // "<matrix name>/<index>", stable for a given matrix file

  // One member per row of ATTNFUZZ_CASE_FIELDS (case/case_schema.h), with its default.
#define ATTNFUZZ_CASE_MEMBER(member, Codec, key, value, use) Codec::Value member = value;
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_MEMBER, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_CASE_MEMBER

  bool operator==(const AttentionCase&) const = default;
};

// Each field's row of the table as types and constants, for code generic over the fields:
//   CaseFieldTraits<CaseField::batch>::case_field is CaseField::batch,
//   ::member &AttentionCase::batch, ::Codec PositiveInteger, ::key "batch",
//   ::use CaseFieldUse::problem.
template <CaseField field>
struct CaseFieldTraits;
#define ATTNFUZZ_CASE_TRAITS(field, FieldCodec, field_key, value, field_use) \
  template <>                                                                \
  struct CaseFieldTraits<CaseField::field> {                                 \
    using Codec = FieldCodec;                                                \
    static constexpr CaseField case_field = CaseField::field;                \
    static constexpr auto member = &AttentionCase::field;                    \
    static constexpr std::string_view key = field_key;                       \
    static constexpr CaseFieldUse use = CaseFieldUse::field_use;             \
  };
ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_TRAITS, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_CASE_TRAITS

// Calls visit(CaseFieldTraits<F>{}) for every field F, in the table's order.
template <typename Visitor>
void for_each_case_field(Visitor&& visit) {
#define ATTNFUZZ_CASE_VISIT(field, Codec, key, value, use) \
  visit(CaseFieldTraits<CaseField::field>{});
  ATTNFUZZ_CASE_FIELDS(ATTNFUZZ_CASE_VISIT, ATTNFUZZ_CASE_IGNORE, ATTNFUZZ_CASE_IGNORE)
#undef ATTNFUZZ_CASE_VISIT
}

// The scale a case runs with: its own, or 1/sqrt(head_dim) when it leaves it at 0.
double effective_softmax_scale(const AttentionCase& attention_case);

// The problem a case describes, strides and scale filled in.
AttentionProblem problem_of(const AttentionCase& attention_case);

// The problem's sizes and variants without its strides or index arrays: safe for any case, even
// one that is not valid (whose strides could overflow), e.g. to describe it or ask which features
// (core/problem_features.h) it uses.
AttentionProblem problem_shape_of(const AttentionCase& attention_case);

// Why a case's fields do not fit together, blaming one field: per-sequence lengths that are not
// one per sequence or longer than seq_len_q (seq_len_k), packed totals or page numbers past int32.
struct CaseInconsistency {
  CaseField field;
  std::string message;
};
std::optional<CaseInconsistency> find_inconsistency(const AttentionCase& attention_case);

// "B=16 H=4 Sq=448 Sk=448 D=64 fp16 data=normal seed=1", plus layout and padding when not default.
std::string describe_case(const AttentionCase& attention_case);

}  // namespace attnfuzz
