// SPDX-License-Identifier: BSD-3-Clause
// A valid case and, for every field of the case schema (case/case_schema.h), another valid value:
// the tests that hold each place a field must reach to the schema's table change one field at a
// time with these. A row the schema gains must gain a value here too
// (CaseSchema.FieldsHaveAnAlternativeValue fails until it does).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case/attention_case.h"

namespace attnfuzz {

// The case each field is changed from: every size above one, so that any field can change alone
// and the case stays valid.
inline AttentionCase base_case() {
  AttentionCase base;
  base.batch = 2;
  base.heads = 4;
  base.kv_heads = 4;
  base.seq_len_q = 8;
  base.seq_len_k = 8;
  base.head_dim = 32;
  return base;
}

// Another valid value of every field's key, as a matrix file would write it.
inline const std::map<std::string, nlohmann::json>& alternative_values() {
  // One key a line, in the schema's order: packed two a line, a key is hard to find.
  // clang-format off
  static const std::map<std::string, nlohmann::json> values = {
      {"batch", 3},
      {"heads", 8},
      {"kv_heads", 2},
      {"seq_len_q", 5},
      {"seq_len_k", 9},
      {"head_dim", 64},
      {"dtype", "bf16"},
      {"causal", true},
      {"data", "uniform"},
      {"seed", std::uint64_t{7}},
      {"kernel", "other"},
      {"layout", "bhsd"},
      {"row_padding", 3},
      {"placement", "qkv_packed"},
      {"softmax_scale", 0.5},
      {"inject", "v:large:4"},
      {"seq_lens_q", "5,0"},
      {"seq_lens_k", "8,3"},
      {"page_size", 4},
      {"window_left", 2},
      {"window_right", 1},
      {"softcap", 20.0},
      {"alibi", true},
      {"return_lse", true},
      {"backward", true},
      {"q_dtype", "e4m3"},
      {"k_dtype", "e5m2"},
      {"v_dtype", "e4m3"},
      {"descale", "per_kv_head"},
  };
  // clang-format on
  return values;
}

// The fields' keys, in the table's order.
inline std::vector<std::string> field_keys() {
  std::vector<std::string> keys;
  for_each_case_field([&](auto field) { keys.emplace_back(decltype(field)::key); });
  return keys;
}

// The base case with one field changed to its alternative value.
inline AttentionCase with_alternative(const std::string& key) {
  AttentionCase changed = base_case();
  for_each_case_field([&](auto field) {
    using Field = decltype(field);
    if (Field::key == key) {
      changed.*Field::member = Field::Codec::read(alternative_values().at(key));
    }
  });
  return changed;
}

}  // namespace attnfuzz
