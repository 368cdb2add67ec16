# SPDX-License-Identifier: BSD-3-Clause
# Compiles corpus/matrix/*.json into the binary, so that `fuzz_attention` with no --configs runs
# the shipped default matrix from any working directory.
file(GLOB ATTNFUZZ_MATRIX_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/corpus/matrix/*.json)
string(REPLACE ";" "|" ATTNFUZZ_MATRIX_FILE_ARGS "${ATTNFUZZ_MATRIX_FILES}")
set(ATTNFUZZ_EMBEDDED_MATRICES_CPP ${PROJECT_BINARY_DIR}/generated/embedded_matrices.cpp)
add_custom_command(
  OUTPUT ${ATTNFUZZ_EMBEDDED_MATRICES_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ATTNFUZZ_EMBEDDED_MATRICES_CPP}
          "-DINPUTS=${ATTNFUZZ_MATRIX_FILE_ARGS}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  DEPENDS ${ATTNFUZZ_MATRIX_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding corpus/matrix/*.json"
  VERBATIM)
