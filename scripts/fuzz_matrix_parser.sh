#!/usr/bin/env bash
# The matrix reader's fuzzer: scripts/fuzz_reader.sh matrix_parser [SECONDS | -runs=N] [flags].
exec "$(dirname "$0")/fuzz_reader.sh" matrix_parser "$@"
