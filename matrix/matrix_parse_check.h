// SPDX-License-Identifier: BSD-3-Clause
// The matrix reader's contract, checked on arbitrary bytes: shared by its libFuzzer target
// (fuzz/matrix_parser_fuzzer.cpp) and the ctest replay of its corpus
// (tests/matrix/test_matrix_parse_check.cpp).
//
// Whatever the bytes, the reader either rejects them with a HarnessError of one printable line that
// starts with the file's name and says where the problem is (a JSON pointer, a byte offset, or
// "top level"), or accepts a matrix whose every case is one the harness can run: unique ids,
// positive sizes, heads a multiple of kv_heads, element counts that fit in int64. Anything else
// (another exception, an unlocated or multi-line message, an impossible case) is a misbehaviour.
//
// The parser is a parameter, so that tests can prove the check reports a planted misbehaviour.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "matrix/matrix_file.h"

namespace attnfuzz {

// A matrix reader: text and the name it is known by in, cases out, HarnessError on rejection.
using MatrixTextParser =
    std::function<CaseMatrix(std::string_view text, const std::string& source)>;

// The name the check parses its input under (what rejection messages must start with).
inline constexpr std::string_view kCheckedMatrixSource = "input.json";

// The case limit the check parses under: the code paths are those of kMaxMatrixCases, but an input
// of a few hundred bytes can no longer spend a second of the fuzzer's time expanding 100,000 cases.
// Above the 180 cases of the largest built-in matrix (pr.json).
inline constexpr std::size_t kCheckedMaxMatrixCases = 1000;

// parse_matrix_text with includes resolved among the built-in matrices (corpus/matrix/*.json, by
// file name), never from the disk, and kCheckedMaxMatrixCases: what the check runs by default.
CaseMatrix parse_matrix_text_among_built_ins(std::string_view text, const std::string& source);

// Runs `parser` on `bytes` as kCheckedMatrixSource; returns how it broke the contract above, or
// nullopt when it kept it.
std::optional<std::string> find_matrix_parse_misbehaviour(
    std::string_view bytes, const MatrixTextParser& parser = parse_matrix_text_among_built_ins);

}  // namespace attnfuzz
