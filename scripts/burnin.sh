#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Burn-in: runs the libFuzzer engine for a set time (in fork mode: a crash is kept and the fuzzing
# goes on), minimizes every crash and keeps it as a JSON case, re-runs each found case twice to
# check it is deterministic, samples the fuzzer's memory over time and flags growth, and ends with
# a summary.
#
#   scripts/burnin.sh --minutes N [--kernel NAME] [--kernel-lib PLUGIN.so] [--backend B]
#                     [--plant NAME] [--out DIR] [--corpus DIR] [--regressions DIR]
#                     [--minimize N] [--no-build]
#
# --out (default out/burnin-<time>) receives the crashes, minimized cases, logs and memory trace;
# --corpus (default <out>/corpus) is where the fuzzer grows its corpus: pass the same folder each
# night to go on from where the last run stopped. --regressions (default corpus/regressions) gets
# each minimized crash as <name>.json. A bug the fuzzer hits keeps being hit, each time a new crash
# file: the first --minimize (default 10) are minimized and kept, the rest counted and left in
# <out>/crashes. --no-build uses the binaries in ${ATTNFUZZ_BUILD_DIR:-build}.
#
# Memory: a job that exceeds libFuzzer's -rss_limit_mb (2 GiB) counts as out of memory and fails
# the burn-in; the resident memory of the fuzzer and its jobs is traced every 10 s and judged for
# growth from 30 samples (5 minutes) on (fork mode's jobs start and end: a shorter trace is noise).
#
# Exit code: 0 no crash and no memory growth, 1 crashes found or memory grew, 3 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
kernel=""
kernel_lib=""
backend=""
plant="none"
out=""
corpus=""
regressions=corpus/regressions
minimize_at_most=10
build=1
while (($#)); do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --kernel-lib) kernel_lib=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --plant) plant=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --regressions) regressions=$2; shift 2 ;;
    --minimize) minimize_at_most=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "burnin: unknown argument '$1' (see --help)" >&2; exit 3 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes > 0)) || { echo "burnin: --minutes takes a positive whole number" >&2; exit 3; }
[[ $minimize_at_most =~ ^[0-9]+$ ]] || { echo "burnin: --minimize takes a whole number" >&2; exit 3; }

build_dir=${ATTNFUZZ_BUILD_DIR:-build}
((build)) && bash scripts/build.sh >&2
fuzzer="$build_dir/libfuzzer/fuzz_attention_libfuzzer"
harness="$build_dir/fuzz_attention"
[[ -x $fuzzer ]] || { echo "burnin: $fuzzer was not built (is clang++ installed?)" >&2; exit 3; }

out=${out:-out/burnin-$(date -u +%Y%m%dT%H%M%SZ)}
corpus=${corpus:-$out/corpus}
mkdir -p "$corpus" "$out/crashes" "$out/minimized" "$regressions"
# The same settings for fuzz_attention (--flag value) and for the libFuzzer target (--flag=value).
kernel_flags=()
fuzzer_flags=()
for setting in "kernel:$kernel" "kernel-lib:$kernel_lib" "backend:$backend" "plant:$plant"; do
  name=${setting%%:*}
  value=${setting#*:}
  [[ -z $value || ($name == plant && $value == none) ]] && continue
  kernel_flags+=("--$name" "$value")
  fuzzer_flags+=("--$name=$value")
done

echo "burnin: $minutes min of libFuzzer, kernel ${kernel_lib:-${kernel:-default}}," \
  "backend ${backend:-auto}, plant $plant, corpus $corpus, output in $out"
# ${fuzzer_flags[@]+...}: an empty array under set -u, on bash before 4.4 too.
"$fuzzer" ${fuzzer_flags[@]+"${fuzzer_flags[@]}"} -max_total_time=$((minutes * 60)) \
  -dict=corpus/attention.dict -artifact_prefix="$out/crashes/" -print_final_stats=1 -fork=1 \
  -ignore_crashes=1 "$corpus" corpus/seeds > "$out/fuzzer.log" 2>&1 &
fuzzer_pid=$!

# Memory: the resident set of the fuzzer and its children, and the GPU's used memory when there is
# one, every 10 s.
printf 'seconds\trss_kib\tgpu_mib\n' > "$out/memory.tsv"
started=$SECONDS
while kill -0 "$fuzzer_pid" 2>/dev/null; do
  rss=$(ps -o rss= --ppid "$fuzzer_pid" -p "$fuzzer_pid" 2>/dev/null | awk '{s+=$1} END {print s+0}')
  gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1 || true)
  printf '%s\t%s\t%s\n' $((SECONDS - started)) "$rss" "${gpu:--}" >> "$out/memory.tsv"
  sleep 10
done
wait "$fuzzer_pid" || true

# Minimize each crash, keep it as a JSON case, and check it fails twice the same way.
found=0
kept=0
nondeterministic=0
for crash in "$out"/crashes/crash-*; do
  [[ -e $crash ]] || continue
  found=$((found + 1))
  ((kept < minimize_at_most)) || continue
  kept=$((kept + 1))
  name=$(basename "$crash")
  minimized="$out/minimized/$name"
  "$fuzzer" ${fuzzer_flags[@]+"${fuzzer_flags[@]}"} -minimize_crash=1 -runs=2000 \
    -exact_artifact_path="$minimized" "$crash" > "$out/minimize-$name.log" 2>&1 || true
  [[ -s $minimized ]] || cp "$crash" "$minimized"
  "$harness" --describe "$minimized" > "$regressions/$name.json"
  replay() {
    "$harness" --replay "$minimized" ${kernel_flags[@]+"${kernel_flags[@]}"} --quiet 2>&1 |
      grep 'reason:' || true
  }
  first=$(replay)
  second=$(replay)
  if [[ -z $first || $first != "$second" ]]; then
    nondeterministic=$((nondeterministic + 1))
    echo "burnin: $name does not fail the same way twice" >&2
  fi
  echo "burnin: crash $name ($(wc -c < "$crash") -> $(wc -c < "$minimized") bytes) saved as $regressions/$name.json"
done

# Memory growth: the mean of the last quarter of samples against the first quarter's, from 10 s on
# (the sample at 0 s is of a fuzzer still loading: its start is not growth).
growth=$(awk -F'\t' 'NR > 1 && $1 >= 10 {rss[n++] = $2} END {
  if (n < 30) {print "unknown"; exit}
  q = int(n / 4); a = 0; b = 0
  for (i = 0; i < q; i++) {a += rss[i]; b += rss[n - 1 - i]}
  printf "%.0f", (b - a) / q}' "$out/memory.tsv")
samples=$(awk -F'\t' 'NR > 1 && $1 >= 10 {n++} END {print n + 0}' "$out/memory.tsv")

# Executions: in fork mode libFuzzer prints no final stat:: lines, but a progress line
# "#N: cov: ... " after each job, N counting every job's runs so far; the last one is the total.
executions=$(awk '/^#[0-9]+:/ {count = substr($1, 2) + 0} END {print count + 0}' "$out/fuzzer.log")
# The same lines end with "oom/timeout/crash: A/B/C", totals so far: the jobs out of memory.
out_of_memory=$(awk '/oom\/timeout\/crash:/ {for (i = 1; i < NF; ++i) if ($i == "oom/timeout/crash:") {
  split($(i + 1), counts, "/"); oom = counts[1] + 0}} END {print oom + 0}' "$out/fuzzer.log")
echo
echo "burn-in summary"
echo "  time:            $minutes min"
echo "  executions:      $executions"
echo "  corpus:          $(find "$corpus" -type f | wc -l) inputs ($corpus)"
echo "  crashes:         $found (minimized and kept: $kept; nondeterministic: $nondeterministic)"
echo "  out of memory:   $out_of_memory jobs (over -rss_limit_mb)"
echo "  RSS growth:      ${growth} KiB (last quarter vs first quarter of $samples samples from 10 s on; judged from 30)"
status=0
((found == 0 && out_of_memory == 0)) || status=1
if [[ $growth != unknown ]] && ((growth > 65536)); then
  echo "  memory:          GREW by more than 64 MiB: look for a leak"
  status=1
fi
exit $status
