#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the dependencies (scripts/install_deps.sh), configures and builds attnfuzz into
# ${ATTNFUZZ_BUILD_DIR:-build}. Idempotent and incremental: rerunning rebuilds only what changed.
#   scripts/build.sh [--target NAME]... [CMAKE CONFIGURE ARGUMENTS]
# --target builds only that target and what it needs (repeatable; default: everything, the test
# suite, benchmarks, examples and fuzzers included); the other arguments go to CMake's configure
# step, e.g. scripts/build.sh -DATTNFUZZ_ENABLE_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ATTNFUZZ_BUILD_DIR:-build}

targets=()
while (($# >= 2)) && [[ $1 == --target ]]; do
  targets+=(--target "$2")
  shift 2
done

bash scripts/install_deps.sh
# nvcc lives outside PATH in the CUDA toolkit's default location; CMake finds it there too.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNFUZZ_WERROR=ON "$@"
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
