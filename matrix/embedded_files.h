// SPDX-License-Identifier: BSD-3-Clause
// Files compiled into the binary (generated from corpus/matrix/ by cmake/embed_files.cmake).
#pragma once

#include <span>
#include <string_view>

namespace attnfuzz {

struct EmbeddedFile {
  std::string_view name;  // file name, e.g. "pr.json"
  std::string_view text;
};

std::span<const EmbeddedFile> embedded_matrix_files();

}  // namespace attnfuzz
