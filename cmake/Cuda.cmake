# SPDX-License-Identifier: BSD-3-Clause
# CUDA is optional at configure time. With nvcc present the CUDA targets build (for sm_80, sm_89
# and sm_90 unless CMAKE_CUDA_ARCHITECTURES says otherwise); without it the CPU parts build alone
# and this notice says what was left out.
set(ATTNFUZZ_HAVE_CUDA OFF)
if(ATTNFUZZ_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 89 90)
    endif()
    enable_language(CUDA)
    # C++20 as for the host code. CMake 3.25's NVIDIA module stops at C++17; nvcc 12+ takes
    # -std=c++20, so teach CMake the flag (newer CMake sets the same itself).
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION OR CMAKE_CUDA20_STANDARD_COMPILE_OPTION STREQUAL "")
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit REQUIRED)
    set(ATTNFUZZ_HAVE_CUDA ON)
    message(STATUS "attnfuzz: CUDA ${CUDAToolkit_VERSION} found; CUDA targets build for "
                   "${CMAKE_CUDA_ARCHITECTURES}")
  endif()
endif()
if(NOT ATTNFUZZ_HAVE_CUDA)
  message(NOTICE "attnfuzz: nvcc not found (or ATTNFUZZ_ENABLE_CUDA=OFF): the CUDA backend is left "
                 "out; CPU kernels and the CPU oracle build as usual")
endif()

function(attnfuzz_link_cuda_runtime target)
  if(ATTNFUZZ_HAVE_CUDA)
    target_link_libraries(${target} PUBLIC CUDA::cudart)
    target_compile_definitions(${target} PUBLIC ATTNFUZZ_HAVE_CUDA=1)
  else()
    target_compile_definitions(${target} PUBLIC ATTNFUZZ_HAVE_CUDA=0)
  endif()
endfunction()
