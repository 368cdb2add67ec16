#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The matrix reader's fuzzer: scripts/fuzz_reader.sh matrix_parser [SECONDS | -runs=N] [flags].
exec "$(dirname "$0")/fuzz_reader.sh" matrix_parser "$@"
