#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Is the performance gate honest? Repeats a pair of runs that must come out one way each and
# counts how often they did:
#
#   --mode side-by-side (default): the kernel timed beside a reference in the same run
#     (1) fuzz_attention --bench --against-plant none                       (must exit 0: itself)
#     (2) again with --plant slow_extra_pass --against-plant none          (must exit 1: slower)
#   --mode baseline: against a stored report of an earlier run
#     (0) fuzz_attention --bench --json baseline.json                       (the baseline)
#     (1) the same build again with --baseline baseline.json                (must exit 0)
#     (2) again with --plant slow_extra_pass --baseline baseline.json       (must exit 1)
#     and counts the verdicts that were suspect (timed on a busy machine: not failed unless
#     --fail-on-suspect, which would have failed them)
#   --mode sensitivity: side by side, each lighter slowdown (slow_extra_pass_1_in_12, _1_in_8,
#     _1_in_4, _1_in_2) against the correct kernel: how often each was caught, and the median of
#     its measured ratios (the slowdown it really is)
#
# --load starts scripts/busy_cores.sh (every core kept busy by another process) before the first
# run and stops it after the last: the gate judged on a machine as busy as a shared runner gets.
# Prints a Markdown table, one row per repetition, and the counts; exits 0 only when every run of
# (1) and (2) came out right (sensitivity: always, it measures). On a GPU pass --backend cuda
# --kernel cuda_flash.
#
#   scripts/bench_gate.sh [--mode side-by-side|baseline|sensitivity] [--load]
#                         [--repetitions 20] [--configs corpus/matrix/bench_small.json]
#                         [--backend cpu] [--kernel cpu_flash] [--no-build] [-- extra flags...]
# Flags after -- go to every fuzz_attention run (e.g. --bench-seconds 1 --threads 1).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=side-by-side
load=0
repetitions=20
configs=corpus/matrix/bench_small.json
backend=cpu
kernel=cpu_flash
build=1
extra=()
while (($#)); do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --load) load=1; shift ;;
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
case "$mode" in
  side-by-side|baseline|sensitivity) ;;
  *) echo "bench_gate: --mode is side-by-side, baseline or sensitivity, not '$mode'" >&2; exit 3 ;;
esac
if ! [[ $repetitions =~ ^[0-9]+$ ]] || ((repetitions < 1)); then
  echo "bench_gate: --repetitions: expected a count from 1, got '$repetitions'" >&2
  exit 3
fi
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
((build)) && bash scripts/build.sh >&2
harness="$build_dir/fuzz_attention"
work=$(mktemp -d)
load_pid=
cleanup() {
  [[ -n $load_pid ]] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if ((load)); then
  bash scripts/busy_cores.sh &
  load_pid=$!
  sleep 5 # the spinners running, the load average on its way up
  echo "competing load: scripts/busy_cores.sh ($(getconf _NPROCESSORS_ONLN) spinning processes)"
fi

bench() {
  # ${extra[@]+...}: an empty array under set -u, on bash before 4.4 too.
  "$harness" --bench --quiet --configs "$configs" --backend "$backend" --kernel "$kernel" \
    ${extra[@]+"${extra[@]}"} "$@"
}

# One line of a run's report: its gate's ratio per case ("1.004 0.998"; "-" for a case without
# one), then " | " and the count of suspect verdicts; "(no report) | 0" when the run wrote none.
verdicts() {
  python3 -c 'import json,os,sys
if not os.path.exists(sys.argv[1]): print("(no report) | 0"); sys.exit()
cases=json.load(open(sys.argv[1]))["results"]
def comparison(case):
    performance = case.get("performance") or {}
    reference = performance.get("reference") or {}
    return reference.get("comparison") or performance.get("baseline") or {}
ratios = [comparison(c).get("ratio") for c in cases]
suspects = sum(comparison(c).get("verdict") == "suspect" for c in cases)
print(" ".join("-" if r is None else "%.3f" % r for r in ratios), "|", suspects)' "$1"
}

# The median of the numbers in a file, one per line.
median() { sort -g "$1" | awk '{v[NR]=$1} END {print NR ? (NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2) : "-"}'; }

run_pair() { # $1 repetition; then the flags of run (1), "--", the flags of run (2)
  local repetition=$1
  shift
  local first=() second=()
  while (($#)) && [[ $1 != -- ]]; do first+=("$1"); shift; done
  shift
  second=("$@")
  rm -f "$work/self.json" "$work/plant.json"
  self_exit=0
  bench "${first[@]}" --json "$work/self.json" >/dev/null || self_exit=$?
  plant_exit=0
  bench "${second[@]}" --json "$work/plant.json" >/dev/null || plant_exit=$?
  ((self_exit == 0)) && self_passed=$((self_passed + 1))
  ((plant_exit == 1)) && plant_caught=$((plant_caught + 1))
  local self_line plant_line
  self_line=$(verdicts "$work/self.json")
  plant_line=$(verdicts "$work/plant.json")
  self_suspects=$((self_suspects + ${self_line##*| }))
  plant_suspects=$((plant_suspects + ${plant_line##*| }))
  echo "$repetition | $self_exit | $self_line | $plant_exit | $plant_line"
}

self_passed=0 plant_caught=0 self_suspects=0 plant_suspects=0
started=$(date +%s)
case "$mode" in
  side-by-side)
    echo "repetition | itself: exit | ratios | suspect | slow_extra_pass: exit | ratios | suspect"
    echo "---|---|---|---|---|---|---"
    for ((repetition = 1; repetition <= repetitions; ++repetition)); do
      run_pair "$repetition" --against-plant none -- --plant slow_extra_pass --against-plant none
    done
    ;;
  baseline)
    echo "repetition | itself: exit | ratios | suspect | slow_extra_pass: exit | ratios | suspect"
    echo "---|---|---|---|---|---|---"
    for ((repetition = 1; repetition <= repetitions; ++repetition)); do
      bench --json "$work/baseline.json" >/dev/null || {
        echo "bench_gate: the baseline run itself failed (exit $?)" >&2
        exit 3
      }
      run_pair "$repetition" --baseline "$work/baseline.json" -- \
        --baseline "$work/baseline.json" --plant slow_extra_pass
    done
    ;;
  sensitivity)
    echo "plant | caught (exit 1) | median ratio over its runs and cases | exits"
    echo "---|---|---|---"
    for plant in slow_extra_pass_1_in_12 slow_extra_pass_1_in_8 slow_extra_pass_1_in_4 \
      slow_extra_pass_1_in_2; do
      caught=0 exits=""
      : >"$work/ratios"
      for ((repetition = 1; repetition <= repetitions; ++repetition)); do
        rm -f "$work/plant.json"
        plant_exit=0
        bench --plant "$plant" --against-plant none --json "$work/plant.json" >/dev/null ||
          plant_exit=$?
        ((plant_exit == 1)) && caught=$((caught + 1))
        exits+="$plant_exit"
        line=$(verdicts "$work/plant.json")
        tr ' ' '\n' <<<"${line%% |*}" | grep -E '^[0-9.]+$' >>"$work/ratios" || true
      done
      echo "$plant | $caught of $repetitions | $(median "$work/ratios") | $exits"
    done
    echo
    echo "($(($(date +%s) - started)) s)"
    exit 0
    ;;
esac
echo
echo "itself: exit 0 in $self_passed of $repetitions ($self_suspects suspect verdicts)"
echo "with --plant slow_extra_pass: exit 1 in $plant_caught of $repetitions" \
  "($plant_suspects suspect verdicts)"
echo "($(($(date +%s) - started)) s)"
((self_passed == repetitions && plant_caught == repetitions))
