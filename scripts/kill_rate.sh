#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What the harness is worth: for every planted bug of a kernel, whether each engine kills it and
# how long that takes from a clean start:
#   (1) the seed's 27-config matrix   fuzz_attention --configs corpus/matrix/seed27.json --fail-fast
#   (2) the PR matrix                 fuzz_attention --configs corpus/matrix/pr.json --fail-fast
#   (3) properties, 60 s budget       fuzz_attention --properties --budget 60 --fail-fast
#   (4) libFuzzer, 120 s budget       fuzz_attention_libfuzzer -max_total_time=120 (fresh corpus)
# Prints a Markdown table (time to first failure in seconds, "-" when not killed) and a summary.
#
#   scripts/kill_rate.sh [--kernel cpu_flash | --kernel-py FILE.py:FN [--python PY]
#                        [--py-framework numpy] | --kernel-lib PLUGIN.so]
#                        [--budget 60] [--libfuzzer-budget 120]
#                        [--plants "a b c"] [--no-seed27] [--no-build]
# --kernel-py measures a Python function instead (docs/python.md), whose plants are switched by the
# environment variable ATTNFUZZ_TEST_PLANT (as tests/python/reference_attention.py's are); --plants
# names them.
# --kernel-lib measures a plugin whose plants that variable switches too, as the version 1 plugin
# around cpu_flash does (tests/plugins/planted_flash_v1.cpp); --plants defaults to cpu_flash's.
# --no-build uses the binaries already in ${ATTNFUZZ_BUILD_DIR:-build} as they are; --no-seed27
# leaves out column (1), whose full runs (about 2 minutes each plant it misses) dominate the time.
set -euo pipefail
cd "$(dirname "$0")/.."

kernel=cpu_flash
kernel_py=""
kernel_lib=""
python=""
py_framework=numpy
budget=60
libfuzzer_budget=120
plants=""
build=1
seed27_column=1
while (($#)); do
  case "$1" in
    --kernel) kernel=$2; shift 2 ;;
    --kernel-py) kernel_py=$2; shift 2 ;;
    --kernel-lib) kernel_lib=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --py-framework) py_framework=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --libfuzzer-budget) libfuzzer_budget=$2; shift 2 ;;
    --plants) plants=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-seed27) seed27_column=0; shift ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "kill_rate: unknown argument '$1'" >&2; exit 3 ;;
  esac
done
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
((build)) && bash scripts/build.sh >&2
harness="$build_dir/fuzz_attention"
fuzzer="$build_dir/libfuzzer/fuzz_attention_libfuzzer"
# The kernel's flags for fuzz_attention and for the libFuzzer target.
kernel_flags=(--kernel "$kernel")
libfuzzer_kernel=("--kernel=$kernel")
if [[ -n $kernel_py ]]; then
  kernel_flags=(--kernel-py "$kernel_py" ${python:+--python "$python"} --py-framework "$py_framework")
  libfuzzer_kernel=("--kernel-py=$kernel_py" ${python:+"--python=$python"}
    "--py-framework=$py_framework")
  if [[ -z $plants ]]; then
    echo "kill_rate: --kernel-py needs --plants (the function's own plants)" >&2
    exit 3
  fi
fi
if [[ -n $kernel_lib ]]; then
  kernel_flags=(--kernel-lib "$kernel_lib")
  libfuzzer_kernel=("--kernel-lib=$kernel_lib")
fi
# with_plant FLAG_FORM PLANT COMMAND...: the command with the plant switched on: by the environment
# for a Python function or a plugin, else by flag (FLAG_FORM "separate": --plant NAME; "joined": --plant=NAME,
# as the libFuzzer target takes it).
with_plant() {
  local form=$1 plant=$2
  shift 2
  if [[ -n $kernel_py || -n $kernel_lib ]]; then
    ATTNFUZZ_TEST_PLANT=$plant "$@"
  elif [[ $form == joined ]]; then
    "$@" "--plant=$plant"
  else
    "$@" --plant "$plant"
  fi
}
if [[ -z $plants ]]; then
  plants=$("$harness" --list-kernels | awk -v k="$kernel" '
    $1 == k {inside = 1; next} /^[a-z_]+ \(/ {inside = 0}
    inside && /^    [a-z_0-9]+:/ && !/\[a slowdown/ && !/\[a bug of the backward pass/ {
      sub(":", "", $1); print $1}')
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Bounds for the plants of memory and time (a hang, a leak): every run is contained by them.
limits=(--case-timeout 60 --memory-limit 8192)
libfuzzer_limits=(-timeout=60 -rss_limit_mb=2048)

now() { date +%s.%N; }
# Seconds a command ran until it exited 1 (killed), or "-" when it exited otherwise.
time_to_kill() {
  local start end status
  start=$(now)
  set +e
  "$@" > "$work/last.log" 2>&1
  status=$?
  set -e
  end=$(now)
  if ((status == 1)) || grep -q "attnfuzz: kernel .* failed" "$work/last.log"; then
    awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}'
  else
    printf -- "-"
  fi
}

echo "| plant | seed27 matrix | pr.json | properties (${budget} s) | libFuzzer (${libfuzzer_budget} s) |"
echo "|---|---|---|---|---|"
killed_by_properties=0
killed_by_libfuzzer=0
count=0
for plant in $plants; do
  count=$((count + 1))
  seed27="not run"
  if ((seed27_column)); then
    seed27=$(time_to_kill with_plant separate "$plant" "$harness" --configs corpus/matrix/seed27.json "${kernel_flags[@]}" --fail-fast --quiet "${limits[@]}")
  fi
  pr=$(time_to_kill with_plant separate "$plant" "$harness" --configs corpus/matrix/pr.json "${kernel_flags[@]}" --fail-fast --quiet "${limits[@]}")
  properties=$(time_to_kill with_plant separate "$plant" "$harness" --properties --budget "$budget" "${kernel_flags[@]}" --fail-fast --regressions "$work/regressions" "${limits[@]}")
  rm -rf "$work/corpus" && mkdir -p "$work/corpus"
  libfuzzer="-"
  if [[ -x $fuzzer ]]; then
    libfuzzer=$(time_to_kill with_plant joined "$plant" "$fuzzer" "${libfuzzer_kernel[@]}" -max_total_time="$libfuzzer_budget" "${libfuzzer_limits[@]}" \
      -dict=corpus/attention.dict -artifact_prefix="$work/" "$work/corpus" corpus/seeds)
  fi
  [[ $properties != - ]] && killed_by_properties=$((killed_by_properties + 1))
  [[ $libfuzzer != - ]] && killed_by_libfuzzer=$((killed_by_libfuzzer + 1))
  echo "| \`$plant\` | $seed27 | $pr | $properties | $libfuzzer |"
done
echo
echo "killed by properties: $killed_by_properties of $count; by libFuzzer: $killed_by_libfuzzer of $count"
