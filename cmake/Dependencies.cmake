# SPDX-License-Identifier: BSD-3-Clause
# Every dependency comes from a Debian package (scripts/install_deps.sh installs them).
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tinyxml2 REQUIRED)
find_package(rapidcheck REQUIRED)  # the property engine

# OpenBLAS: float64 BLAS for the oracle. Debian's package ships a CMake config without a target,
# and with absolute paths: a build against an unpacked copy (scripts/gpu_validate.sh) passes
# -DOpenBLAS_INCLUDE_DIRS=... -DOpenBLAS_LIBRARIES=... instead.
if(NOT OpenBLAS_LIBRARIES)
  find_package(OpenBLAS REQUIRED)
endif()
add_library(attnfuzz::blas INTERFACE IMPORTED)
target_include_directories(attnfuzz::blas INTERFACE ${OpenBLAS_INCLUDE_DIRS})
target_link_libraries(attnfuzz::blas INTERFACE ${OpenBLAS_LIBRARIES})

if(ATTNFUZZ_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# glibc's libmvec: vectorised exp for the oracle's softmax (x86-64 glibc only; scalar elsewhere).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES mvec)
set(CMAKE_REQUIRED_FLAGS -fopenmp-simd)
check_cxx_source_compiles([=[
#pragma omp declare simd notinbranch
extern "C" double exp(double) noexcept;
double data[64];
int main() {
#pragma omp simd
  for (int i = 0; i < 64; ++i) data[i] = exp(data[i]);
  return 0;
}]=] ATTNFUZZ_HAVE_LIBMVEC)
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_REQUIRED_FLAGS)
function(attnfuzz_use_vector_math target)
  if(ATTNFUZZ_HAVE_LIBMVEC AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_compile_options(${target} PRIVATE -fopenmp-simd)
    target_compile_definitions(${target} PRIVATE ATTNFUZZ_HAVE_LIBMVEC=1)
    target_link_libraries(${target} PUBLIC mvec)
  endif()
endfunction()
