// Saved cases on disk: a binary case (any libFuzzer crash file, case/case_codec.h) or a matrix
// JSON file (a saved case is a one-case matrix). Replay, --describe and the property engine read
// cases through here.
#pragma once

#include <filesystem>
#include <vector>

#include "case/attention_case.h"

namespace attnfuzz {

// Reads the cases of one file. Binary cases get the file name as their id. Throws HarnessError
// naming the file.
std::vector<AttentionCase> load_case_file(const std::filesystem::path& path);

}  // namespace attnfuzz
