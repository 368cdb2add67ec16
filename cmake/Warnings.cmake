# SPDX-License-Identifier: BSD-3-Clause
# -Wall -Wextra on every target of ours (C, C++ and CUDA); -Werror when ATTNFUZZ_WERROR (CI) is on.
#
# GCC 12 reports -Wrestrict on `"literal" + std::string` at -O2 and above inside libstdc++'s own
# char_traits (GCC bug 105651, fixed in GCC 13): a false positive we cannot fix in our code.
set(ATTNFUZZ_GCC12_FALSE_POSITIVES "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  set(ATTNFUZZ_GCC12_FALSE_POSITIVES -Wno-restrict)
endif()

function(attnfuzz_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra ${ATTNFUZZ_GCC12_FALSE_POSITIVES}>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${ATTNFUZZ_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:C>,$<BOOL:${ATTNFUZZ_WERROR}>>:-Werror>
    # nvcc: the host compiler's warnings on host code, nvcc's own on device code.
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${ATTNFUZZ_WERROR}>>:-Werror=all-warnings>)
endfunction()
