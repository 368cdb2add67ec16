#!/bin/bash -eu
# SPDX-License-Identifier: BSD-3-Clause
# ClusterFuzzLite build: compiles attnfuzz's libFuzzer targets through the project's own CMake
# options (ATTNFUZZ_LIBFUZZER, ATTNFUZZ_MATRIX_PARSER_FUZZER) with the compilers and flags
# ClusterFuzzLite hands every build.sh, and puts into $OUT, for each target: the binary, its seed
# corpus ($OUT/<target>_seed_corpus.zip), its dictionary ($OUT/<target>.dict) and an .options file
# naming the dictionary. Shared libraries the binaries need beyond glibc (OpenBLAS, tinyxml2, their
# Fortran and C++ runtimes) are copied into $OUT/lib, which the binaries and those libraries find
# through the binaries' RPATH $ORIGIN/lib: only $OUT reaches the machine that runs the fuzzers.
#
# Environment (set by ClusterFuzzLite; set them yourself to run it without Docker):
#   CC, CXX, CFLAGS, CXXFLAGS   clang and the sanitizer + coverage flags
#   LIB_FUZZING_ENGINE          how to link libFuzzer (-fsanitize=fuzzer)
#   OUT                         output folder;  WORK: scratch folder for the CMake builds
# It runs in the repository root (the Dockerfile's WORKDIR). Locally, from the repository root:
#   CC=clang-14 CXX=clang++-14 CFLAGS="-fsanitize=address,fuzzer-no-link" \
#   CXXFLAGS="-fsanitize=address,fuzzer-no-link" LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
#   OUT=/tmp/cflite-out WORK=/tmp/cflite-work bash .clusterfuzzlite/build.sh
#   /tmp/cflite-out/fuzz_attention_libfuzzer -runs=100
set -euo pipefail

: "${CC:?set CC (clang)}" "${CXX:?set CXX (clang++)}" "${OUT:?set OUT (the output folder)}"
: "${CFLAGS:=}" "${CXXFLAGS:=}" "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
WORK=${WORK:-${TMPDIR:-/tmp}/attnfuzz-cflite-work}
source_dir=$PWD
if [[ ! -f $source_dir/CMakeLists.txt || ! -f $source_dir/fuzz/libfuzzer_target.cpp ]]; then
  echo "build.sh: run it from the attnfuzz repository root (found no CMakeLists.txt in $PWD)" >&2
  exit 1
fi
mkdir -p "$OUT" "$WORK"

# OSS-Fuzz's images add -stdlib=libc++ to CXXFLAGS. The C++ libraries linked here (RapidCheck,
# tinyxml2) are Ubuntu's packages, built against libstdc++; libFuzzer carries its own private
# libc++, so the targets use libstdc++ like every other build of this project. (MemorySanitizer,
# which needs an instrumented libc++, is not offered: project.yaml.)
CXXFLAGS=${CXXFLAGS//-stdlib=libc++/}

# The CMake targets link libFuzzer themselves (-fsanitize=fuzzer, target_link_options in
# CMakeLists.txt): that is what $LIB_FUZZING_ENGINE is for libFuzzer, ClusterFuzzLite's only engine.
# (Putting it into CMAKE_EXE_LINKER_FLAGS would break CMake's compiler check: libFuzzer's main.)
if [[ $LIB_FUZZING_ENGINE != -fsanitize=fuzzer ]]; then
  echo "build.sh: LIB_FUZZING_ENGINE='$LIB_FUZZING_ENGINE': only libFuzzer (-fsanitize=fuzzer) is supported" >&2
  exit 1
fi

generator=Ninja
command -v ninja >/dev/null 2>&1 || generator="Unix Makefiles"
# CMAKE_BUILD_TYPE: a name with no flags of its own, so $CFLAGS/$CXXFLAGS (ClusterFuzzLite's -O1,
# debug info, sanitizers, coverage) are the only optimisation flags; an empty one would make
# CMakeLists.txt choose Release (-O3 -DNDEBUG). $ORIGIN is the dynamic loader's, not the shell's.
# shellcheck disable=SC2016
cmake_common=(
  -G "$generator"
  "-DCMAKE_C_COMPILER=$CC" "-DCMAKE_CXX_COMPILER=$CXX"
  "-DCMAKE_C_FLAGS=$CFLAGS" "-DCMAKE_CXX_FLAGS=$CXXFLAGS"
  -DCMAKE_BUILD_TYPE=ClusterFuzzLite
  '-DCMAKE_BUILD_RPATH=$ORIGIN/lib'
  # DT_RPATH, not DT_RUNPATH: it applies to the libraries' own dependencies too (OpenBLAS needs
  # libgfortran, which must also come from $OUT/lib).
  '-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags'
  -DATTNFUZZ_ENABLE_CUDA=OFF -DATTNFUZZ_WERROR=OFF
  -DATTNFUZZ_BUILD_TESTS=OFF -DATTNFUZZ_BUILD_BENCH=OFF
)

# build_target NAME OPTION: configures the project with -DOPTION=ON into $WORK/NAME and builds
# the executable NAME there.
build_target() {
  local name=$1 option=$2
  cmake -S "$source_dir" -B "$WORK/$name" "${cmake_common[@]}" "-D$option=ON"
  cmake --build "$WORK/$name" --target "$name" --parallel "$(nproc)"
  cp "$WORK/$name/$name" "$OUT/$name"
}

# ship_inputs NAME DICT SEED...: the seed corpus (every file under the SEED folders or files, flat)
# and the dictionary of target NAME.
ship_inputs() {
  local name=$1 dict=$2
  shift 2
  local seeds
  seeds=$(mktemp -d)
  local seed
  for seed in "$@"; do
    if [[ -d $seed ]]; then
      find "$seed" -type f -exec cp -t "$seeds" {} +
    elif [[ -f $seed ]]; then
      cp "$seed" "$seeds"
    fi
  done
  rm -f "$OUT/${name}_seed_corpus.zip"
  if [[ -n $(ls -A "$seeds") ]]; then
    (cd "$seeds" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  fi
  rm -rf "$seeds"
  if [[ -f $dict ]]; then
    cp "$dict" "$OUT/$name.dict"
    printf '[libfuzzer]\ndict = %s.dict\n' "$name" > "$OUT/$name.options"
  fi
}

targets=()

# The attention kernel fuzzer: binary cases (case/case_codec.h) on the CPU backend.
build_target fuzz_attention_libfuzzer ATTNFUZZ_LIBFUZZER
ship_inputs fuzz_attention_libfuzzer corpus/attention.dict corpus/seeds
targets+=(fuzz_attention_libfuzzer)

# The matrix-file reader's fuzzer, where this tree has it. Its seeds: corpus/matrix_parser/ and
# the shipped matrices themselves.
if [[ -f fuzz/matrix_parser_fuzzer.cpp ]] && grep -q ATTNFUZZ_MATRIX_PARSER_FUZZER CMakeLists.txt; then
  build_target matrix_parser_fuzzer ATTNFUZZ_MATRIX_PARSER_FUZZER
  ship_inputs matrix_parser_fuzzer corpus/matrix.dict corpus/matrix_parser corpus/matrix
  targets+=(matrix_parser_fuzzer)
  # The readers of saved cases, worker requests and result streams, from the same configuration.
  if [[ -f fuzz/saved_input_fuzzer.cpp ]]; then
    cmake --build "$WORK/matrix_parser_fuzzer" --target saved_input_fuzzer --parallel "$(nproc)"
    cp "$WORK/matrix_parser_fuzzer/saved_input_fuzzer" "$OUT/saved_input_fuzzer"
    ship_inputs saved_input_fuzzer "" corpus/saved_input
    targets+=(saved_input_fuzzer)
  fi
else
  echo "build.sh: no matrix_parser_fuzzer in this tree: only fuzz_attention_libfuzzer is built" >&2
fi

# Shared libraries beyond glibc, for the runner image, which has none of these packages.
mkdir -p "$OUT/lib"
for target in "${targets[@]}"; do
  ldd "$OUT/$target" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r soname path; do
      case $soname in
        linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | \
          libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.*) ;;
        *) [[ $path -ef $OUT/lib/$soname ]] || cp -L "$path" "$OUT/lib/$soname" ;;
      esac
    done
done

echo "build.sh: built ${targets[*]} into $OUT"
ls -la "$OUT" "$OUT/lib"
