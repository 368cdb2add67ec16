#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test suite: builds attnfuzz (warnings are errors) and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The Python bridge's tests need numpy in a virtual environment (from PyPI); without one they skip.
if ! bash scripts/python_env.sh > /dev/null; then
  echo "test: no Python environment for the bridge's tests (scripts/python_env.sh failed): they skip" >&2
fi
ctest --test-dir "${ATTNFUZZ_BUILD_DIR:-build}" --parallel "$(nproc)" --output-on-failure
