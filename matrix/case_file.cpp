// SPDX-License-Identifier: BSD-3-Clause
#include "matrix/case_file.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <optional>
#include <span>
#include <string>

#include "case/case_codec.h"
#include "core/file_io.h"
#include "core/harness_error.h"
#include "matrix/matrix_file.h"

namespace attnfuzz {

std::vector<AttentionCase> load_case_file(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()),
                                            text.size());
  if (starts_with_case_magic(bytes)) {
    std::string why;
    std::optional<AttentionCase> decoded = decode_case(bytes, &why);
    if (!decoded) throw HarnessError(path.string() + ": " + why);
    decoded->id = path.filename().string();
    if (const std::optional<std::string> cut = first_field_cut_off(bytes)) {
      std::cerr << "fuzz_attention: note: " << path.string() << " ends after " << bytes.size()
                << " bytes, before its field '" << *cut
                << "': that field and the ones after it take their defaults (as in a libFuzzer "
                   "input minimized by cutting its end; a case file written whole has "
                << kWholeCaseMinBytes << " bytes or more)\n";
    }
    return {*decoded};
  }
  const auto first = std::find_if(text.begin(), text.end(), [](char c) {
    return c != ' ' && c != '\n' && c != '\r' && c != '\t';
  });
  if (first == text.end() || *first != '{') {
    throw HarnessError(path.string() +
                       ": neither a binary case (starting \"AFZ\") nor a JSON matrix file");
  }
  // Ids from the file's name, as a binary file's: cases of different files never share an id
  // (the matrices of saved regressions were all called "regression" once).
  std::vector<AttentionCase> cases = load_matrix_file(path).cases;
  for (std::size_t position = 0; position < cases.size(); ++position) {
    cases[position].id = path.filename().string() + "/" + std::to_string(position);
  }
  return cases;
}

}  // namespace attnfuzz
