#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzes one of the harness's readers of untrusted bytes: builds its libFuzzer target (ASan +
# UBSan, the nested build in cmake/LibFuzzer.cmake) if needed, then runs it on a scratch copy of
# its corpus, so the shipped corpus is never written. Prints libFuzzer's final lines
# ("Done N runs in S second(s)", stat::...).
#
#   scripts/fuzz_reader.sh READER [SECONDS | -runs=N] [more libFuzzer flags]   (default: 60 s)
#   READER: matrix_parser  matrix and config files (corpus/matrix_parser/, the shipped matrices,
#                          corpus/matrix.dict)
#           saved_input    binary case files, worker case requests, result streams
#                          (corpus/saved_input/)
#
# Exit code: 0 no crash, 1 the fuzzer found a misbehaviour (crash file kept, path printed),
# 3 bad arguments or the fuzzer could not be built (no clang). The scratch folder (its grown corpus
# and log) is kept under ${ATTNFUZZ_OUT_DIR:-out}/; fold new inputs into the shipped corpus with
#   <fuzzer> -merge=1 corpus/<its corpus> out/fuzz_<reader>-.../corpus
set -euo pipefail
cd "$(dirname "$0")/.."

reader=${1:-}
case "$reader" in
  matrix_parser|saved_input) shift ;;
  -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
  *) echo "fuzz_reader: expected a READER (matrix_parser or saved_input), got '$reader' (see --help)" >&2
     exit 3 ;;
esac
name=fuzz_$reader

limit=(-max_total_time=60)
if (($#)); then
  case "$1" in
    -runs=*) limit=("$1"); shift ;;
    *)
      [[ $1 =~ ^[0-9]+$ ]] && (($1 > 0)) ||
        { echo "$name: expected SECONDS or -runs=N, got '$1' (see --help)" >&2; exit 3; }
      limit=("-max_total_time=$1"); shift ;;
  esac
fi

build_dir=${ATTNFUZZ_BUILD_DIR:-build}
fuzzer="$build_dir/matrix_parser_fuzzer/${reader}_fuzzer"
# A configured build rebuilds only this fuzzer (cheap); otherwise the whole project is built once.
if [[ -f $build_dir/build.ninja ]] && grep -q matrix_parser_fuzzer_build "$build_dir/build.ninja"; then
  cmake --build "$build_dir" --target matrix_parser_fuzzer_build >&2
else
  bash scripts/build.sh >&2
fi
[[ -x $fuzzer ]] ||
  { echo "$name: $fuzzer was not built (is clang++ installed?)" >&2; exit 3; }

scratch=${ATTNFUZZ_OUT_DIR:-out}/$name-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$scratch/corpus"
options=()
if [[ $reader == matrix_parser ]]; then
  cp corpus/matrix_parser/* "$scratch/corpus/"
  for matrix in corpus/matrix/*.json; do cp "$matrix" "$scratch/corpus/shipped-${matrix##*/}"; done
  options=(-dict=corpus/matrix.dict)
else
  cp corpus/saved_input/* "$scratch/corpus/"
fi

command=("$fuzzer" "${options[@]}" "${limit[@]}" -print_final_stats=1
         "-artifact_prefix=$scratch/" "$@" "$scratch/corpus")
echo "$name: ${command[*]}" >&2
status=0
"${command[@]}" > "$scratch/fuzz.log" 2>&1 || status=$?

grep -E '^(Done [0-9]+ runs|stat::)' "$scratch/fuzz.log" || true
if ((status != 0)); then
  grep -E 'reader misbehaved|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' \
    "$scratch/fuzz.log" | head -20 || true
  ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/oom-* "$scratch"/timeout-* 2>/dev/null || true
  echo "$name: FOUND A PROBLEM (exit $status); full log: $scratch/fuzz.log" >&2
  exit 1
fi
echo "$name: no crash; corpus grew to $(ls "$scratch/corpus" | wc -l) inputs in $scratch/corpus" >&2
