# SPDX-License-Identifier: BSD-3-Clause
# The libFuzzer binary needs clang (-fsanitize=fuzzer), while the main build may use g++. When
# clang++ is on the machine, a nested build of this same source tree with clang and
# ATTNFUZZ_LIBFUZZER=ON builds build/libfuzzer/fuzz_attention_libfuzzer as part of every build,
# with the CUDA kernels when the main build has them.
find_program(ATTNFUZZ_CLANGXX NAMES clang++ clang++-14)
if(NOT ATTNFUZZ_CLANGXX)
  message(NOTICE "attnfuzz: clang++ not found: the libFuzzer target is left out")
  return()
endif()
include(ExternalProject)
set(ATTNFUZZ_LIBFUZZER_BRIDGE "")
set(ATTNFUZZ_LIBFUZZER_DEPENDS "")
if(ATTNFUZZ_HAVE_PYTHON_BRIDGE)
  set(ATTNFUZZ_LIBFUZZER_BRIDGE "$<TARGET_FILE:attnfuzz_python_bridge>")
  set(ATTNFUZZ_LIBFUZZER_DEPENDS attnfuzz_python_bridge)
endif()
ExternalProject_Add(libfuzzer_build
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${PROJECT_BINARY_DIR}/libfuzzer
  CMAKE_GENERATOR ${CMAKE_GENERATOR}
  CMAKE_ARGS
    -DCMAKE_CXX_COMPILER=${ATTNFUZZ_CLANGXX}
    -DCMAKE_BUILD_TYPE=Release
    -DATTNFUZZ_LIBFUZZER=ON
    -DATTNFUZZ_WERROR=${ATTNFUZZ_WERROR}
    -DATTNFUZZ_ENABLE_CUDA=${ATTNFUZZ_HAVE_CUDA}
    "-DCMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER}"
    "-DCMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES}"
    "-DATTNFUZZ_PYTHON_BRIDGE=${ATTNFUZZ_LIBFUZZER_BRIDGE}"
    "-DATTNFUZZ_PYTHON_BRIDGE_VERSION=${ATTNFUZZ_PYTHON_BRIDGE_VERSION}"
  DEPENDS ${ATTNFUZZ_LIBFUZZER_DEPENDS}
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  USES_TERMINAL_BUILD ON)
set(ATTNFUZZ_LIBFUZZER_BINARY ${PROJECT_BINARY_DIR}/libfuzzer/fuzz_attention_libfuzzer)

# The readers' own fuzzers (fuzz/matrix_parser_fuzzer.cpp, fuzz/saved_input_fuzzer.cpp): a second,
# small nested build of only core/, case/, the readers and the few run/, oracle/ and perf/ sources they
# need, with ASan and UBSan, into build/matrix_parser_fuzzer/. No CUDA, no BLAS: about a minute of
# compiling on one core.
option(ATTNFUZZ_BUILD_MATRIX_PARSER_FUZZER
  "With clang, also build the matrix reader's libFuzzer target (ASan + UBSan)" ON)
if(ATTNFUZZ_BUILD_MATRIX_PARSER_FUZZER)
  ExternalProject_Add(matrix_parser_fuzzer_build
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${PROJECT_BINARY_DIR}/matrix_parser_fuzzer
    CMAKE_GENERATOR ${CMAKE_GENERATOR}
    CMAKE_ARGS
      -DCMAKE_CXX_COMPILER=${ATTNFUZZ_CLANGXX}
      -DCMAKE_BUILD_TYPE=RelWithDebInfo
      -DATTNFUZZ_MATRIX_PARSER_FUZZER=ON
      -DATTNFUZZ_WERROR=${ATTNFUZZ_WERROR}
      -DATTNFUZZ_ENABLE_CUDA=OFF
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    USES_TERMINAL_BUILD ON)
  set(ATTNFUZZ_MATRIX_PARSER_FUZZER_BINARY
      ${PROJECT_BINARY_DIR}/matrix_parser_fuzzer/matrix_parser_fuzzer)
  set(ATTNFUZZ_SAVED_INPUT_FUZZER_BINARY
      ${PROJECT_BINARY_DIR}/matrix_parser_fuzzer/saved_input_fuzzer)
endif()
