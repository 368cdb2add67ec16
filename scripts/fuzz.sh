#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: builds fuzz_attention (only it: the test suite, benchmarks and fuzzers are
# scripts/test.sh's to build) and runs it on its built-in default matrix (corpus/matrix/pr.json).
# Arguments go to fuzz_attention, e.g. scripts/fuzz.sh --json report.json
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --target fuzz_attention >&2  # build log on stderr: stdout is the report
exec "${ATTNFUZZ_BUILD_DIR:-build}/fuzz_attention" "$@"
