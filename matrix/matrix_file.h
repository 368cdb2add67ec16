// SPDX-License-Identifier: BSD-3-Clause
// Matrix files: JSON that expands into a list of cases.
//
//   {"name": "pr",
//    "include": ["seed27.json", "edges.json"],          // optional: other matrices, appended first
//    "defaults": {"head_dim": 64, "dtype": "fp16"},     // scalars merged under every case
//    "matrix": {"seq_len": [448, 512], "batch": [16]},  // optional: one cartesian product
//    "cases": [{"seq_len_q": 113, "seq_len_k": [1, 203]}]}  // each: array values form a product
//
// Case keys are the fields of case/case_schema.h, with their shorthand and aliases. Any error
// (malformed JSON, unknown key, wrong type, impossible shape, a case too large for this machine's
// memory) throws HarnessError naming the file, the case and the field.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "case/attention_case.h"

namespace attnfuzz {

struct CaseMatrix {
  std::string name;
  std::string source;  // the file it came from, or "built-in:<name>"
  std::vector<AttentionCase> cases;
};

// The most cases one matrix may hold, includes and all. At a millisecond or more a case, a bigger
// matrix is a mistake, and a few hundred bytes of arrays could otherwise expand into billions of
// cases and exhaust memory before any message.
inline constexpr std::size_t kMaxMatrixCases = 100'000;

// Reads a matrix file; "include" paths resolve relative to the including file.
CaseMatrix load_matrix_file(const std::filesystem::path& path);

// Parses matrix text; `source` names it in messages, includes resolve through `resolve_include`
// (given the included name, return its text or throw HarnessError). A matrix of more than
// `max_cases` cases is an error (the fuzzer lowers the limit to stay fast).
CaseMatrix parse_matrix_text(std::string_view text, const std::string& source,
                             const std::function<std::string(const std::string&)>& resolve_include,
                             std::size_t max_cases = kMaxMatrixCases);

// The matrices shipped in corpus/matrix/, compiled into the binary (pr.json is the default run).
std::vector<std::string> built_in_matrix_names();
CaseMatrix load_built_in_matrix(const std::string& name);  // e.g. "pr.json"

// Every key a matrix file may give a case, in the order keys apply within one object (and arrays
// expand, the last fastest): the schema's fields, shorthands and aliases (case/case_schema.h).
std::vector<std::string> case_keys();

}  // namespace attnfuzz
