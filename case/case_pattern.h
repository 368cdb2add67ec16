// SPDX-License-Identifier: BSD-3-Clause
// A pattern over cases: some of a case's keys, each with the one value a matching case holds, as a
// matrix file or a report's `config` writes them ({"dtype": "bf16", "head_dim": 256}). Keys are
// the fields of case/case_schema.h with their shorthands and aliases, values read by the fields'
// own codecs, so a pattern means what the same keys mean in a matrix file. The scale compares as
// the case runs with it (a report's config holds 1/sqrt(head_dim) for a case that sets none).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case/attention_case.h"

namespace attnfuzz {

// A key of the pattern that no case has, or a value its field cannot hold.
struct CasePatternProblem {
  std::string key;  // "" for the pattern as a whole
  std::string message;
};

class CasePattern {
 public:
  CasePattern() = default;  // matches every case

  // Throws CasePatternProblem.
  static CasePattern from_json(const nlohmann::json& where);

  bool matches(const AttentionCase& attention_case) const;

 private:
  std::vector<std::function<bool(const AttentionCase&)>> conditions_;
};

}  // namespace attnfuzz
