#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer: the asan-ubsan presets
# of CMakePresets.json (g++, RelWithDebInfo, CPU only, no nested libFuzzer build), configured,
# built and tested in build-asan-ubsan/. The test preset sets ASAN_OPTIONS and UBSAN_OPTIONS (a
# sanitizer report exits 99); the reasons for each choice are in CMakePresets.json.
# Arguments go to ctest, e.g. scripts/test_sanitizers.sh -R CpuFlash --output-junit "$PWD/san.xml"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake --preset asan-ubsan
cmake --build --preset asan-ubsan --parallel "$(nproc)"
ctest --preset asan-ubsan --parallel "$(nproc)" "$@"
