// SPDX-License-Identifier: BSD-3-Clause
// Saved cases on disk: a binary case (any libFuzzer crash file, case/case_codec.h) or a matrix
// JSON file (a saved case is a one-case matrix). Replay, --describe and the property engine read
// cases through here.
#pragma once

#include <filesystem>
#include <vector>

#include "case/attention_case.h"

namespace attnfuzz {

// Reads the cases of one file; their ids come from the file's name: a binary case's is the name,
// a JSON file's cases' are "<name>/0", "<name>/1", ... (so no two files of a folder share an id).
// Throws HarnessError naming the file.
std::vector<AttentionCase> load_case_file(const std::filesystem::path& path);

}  // namespace attnfuzz
