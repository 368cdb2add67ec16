#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test suite: builds attnfuzz (warnings are errors) and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir "${ATTNFUZZ_BUILD_DIR:-build}" --parallel "$(nproc)" --output-on-failure
