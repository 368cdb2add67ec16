// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the matrix/config reader (matrix/matrix_file.h), built with ASan and UBSan
// by the nested build in cmake/LibFuzzer.cmake.
//
// Each input is the text of a matrix file. find_matrix_parse_misbehaviour (matrix_parse_check.h)
// runs the reader on it, includes resolving among the built-in matrices only; a misbehaviour (an
// exception other than HarnessError, a rejection that names no JSON pointer, an accepted case the
// harness cannot run) is printed and the process aborts, so libFuzzer writes the crash file.
// Memory errors and undefined behaviour abort through the sanitizers.
//
//   matrix_parser_fuzzer -dict=corpus/matrix.dict [libFuzzer flags] CORPUS_DIR...
//   (scripts/fuzz_matrix_parser.sh builds it and runs it on a copy of corpus/matrix_parser/)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "matrix/matrix_parse_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const auto misbehaviour = attnfuzz::find_matrix_parse_misbehaviour(bytes)) {
    std::fprintf(stderr, "matrix reader misbehaved: %s\n", misbehaviour->c_str());
    std::abort();
  }
  return 0;
}
