#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Is the performance gate honest? Each repetition times a matrix three times in a row:
#   (1) fuzz_attention --bench --json baseline.json                 (the baseline)
#   (2) the same build again with --baseline baseline.json          (must exit 0: no regression)
#   (3) again with --plant slow_extra_pass --baseline baseline.json (must exit 1: every case slower)
# and prints how often (2) exited 0 and (3) exited 1, with each run's median ratios, then exits 0
# only when both were right every time. On a GPU pass --backend cuda --kernel cuda_flash.
#
#   scripts/bench_gate.sh [--repetitions 20] [--configs corpus/matrix/bench_small.json]
#                         [--backend cpu] [--kernel cpu_flash] [--no-build] [-- extra flags...]
# Flags after -- go to every fuzz_attention run (e.g. --bench-seconds 1 --threads 1).
set -euo pipefail
cd "$(dirname "$0")/.."

repetitions=20
configs=corpus/matrix/bench_small.json
backend=cpu
kernel=cpu_flash
build=1
extra=()
while (($#)); do
  case "$1" in
    --repetitions) repetitions=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bench_gate: unknown argument '$1'" >&2; exit 3 ;;
  esac
done
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
((build)) && bash scripts/build.sh >&2
harness="$build_dir/fuzz_attention"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bench() {
  # ${extra[@]+...}: an empty array under set -u, on bash before 4.4 too.
  "$harness" --bench --quiet --configs "$configs" --backend "$backend" --kernel "$kernel" \
    ${extra[@]+"${extra[@]}"} "$@"
}

# The median ratios of a compared run's report, e.g. "1.004 0.998 1.012"; "-" for a case without
# one (it failed before the comparison, or is not in the baseline), "(no report)" when the run
# wrote none.
ratios() {
  python3 -c 'import json,os,sys
if not os.path.exists(sys.argv[1]): print("(no report)"); sys.exit()
r=json.load(open(sys.argv[1]))["results"]
ratio=lambda c: ((c.get("performance") or {}).get("baseline") or {}).get("ratio")
print(" ".join("-" if ratio(c) is None else "%.3f" % ratio(c) for c in r))' "$1"
}

self_passed=0
plant_caught=0
echo "repetition | self-compare exit | median ratios | with slow_extra_pass exit | median ratios"
echo "---|---|---|---|---"
for ((repetition = 1; repetition <= repetitions; ++repetition)); do
  bench --json "$work/baseline.json" >/dev/null || {
    echo "bench_gate: the baseline run itself failed (exit $?)" >&2
    exit 3
  }
  rm -f "$work/self.json" "$work/plant.json"
  self_exit=0
  bench --baseline "$work/baseline.json" --json "$work/self.json" >/dev/null || self_exit=$?
  plant_exit=0
  bench --baseline "$work/baseline.json" --json "$work/plant.json" --plant slow_extra_pass \
    >/dev/null || plant_exit=$?
  ((self_exit == 0)) && self_passed=$((self_passed + 1))
  ((plant_exit == 1)) && plant_caught=$((plant_caught + 1))
  echo "$repetition | $self_exit | $(ratios "$work/self.json") | $plant_exit | $(ratios "$work/plant.json")"
done
echo
echo "self-compare: exit 0 in $self_passed of $repetitions"
echo "with --plant slow_extra_pass: exit 1 in $plant_caught of $repetitions"
((self_passed == repetitions && plant_caught == repetitions))
