#!/usr/bin/env bash
# Burn-in: runs the libFuzzer engine for a set time, minimizes every crash into
# corpus/regressions/ (as JSON cases), re-runs each found case twice to check it is deterministic,
# samples the fuzzer's memory over time and flags growth, and ends with a summary.
#
#   scripts/burnin.sh --minutes N [--kernel NAME] [--plant NAME] [--out DIR]
#
# Exit code: 0 no crash and no memory growth, 1 crashes found or memory grew, 3 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
kernel=""
plant="none"
out=""
while (($#)); do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --plant) plant=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "burnin: unknown argument '$1' (see --help)" >&2; exit 3 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes > 0)) || { echo "burnin: --minutes takes a positive whole number" >&2; exit 3; }

build_dir=${ATTNFUZZ_BUILD_DIR:-build}
bash scripts/build.sh >&2
fuzzer="$build_dir/libfuzzer/fuzz_attention_libfuzzer"
harness="$build_dir/fuzz_attention"
[[ -x $fuzzer ]] || { echo "burnin: $fuzzer was not built (is clang++ installed?)" >&2; exit 3; }

out=${out:-out/burnin-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out/corpus" "$out/crashes" "$out/minimized"
kernel_flags=()
[[ -n $kernel ]] && kernel_flags+=(--kernel "$kernel")
[[ $plant != none ]] && kernel_flags+=(--plant "$plant")
fuzzer_flags=()
[[ -n $kernel ]] && fuzzer_flags+=("--kernel=$kernel")
[[ $plant != none ]] && fuzzer_flags+=("--plant=$plant")

echo "burnin: $minutes min of libFuzzer, kernel ${kernel:-default}, plant $plant, output in $out"
"$fuzzer" "${fuzzer_flags[@]}" -max_total_time=$((minutes * 60)) -dict=corpus/attention.dict \
  -artifact_prefix="$out/crashes/" -print_final_stats=1 -fork=1 -ignore_crashes=1 \
  "$out/corpus" corpus/seeds > "$out/fuzzer.log" 2>&1 &
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
nondeterministic=0
for crash in "$out"/crashes/crash-*; do
  [[ -e $crash ]] || continue
  found=$((found + 1))
  name=$(basename "$crash")
  minimized="$out/minimized/$name"
  "$fuzzer" "${fuzzer_flags[@]}" -minimize_crash=1 -runs=2000 -exact_artifact_path="$minimized" \
    "$crash" > "$out/minimize-$name.log" 2>&1 || true
  [[ -s $minimized ]] || cp "$crash" "$minimized"
  "$harness" --describe "$minimized" > "corpus/regressions/$name.json"
  first=$("$harness" --replay "$minimized" "${kernel_flags[@]}" --quiet 2>&1 | grep 'reason:' || true)
  second=$("$harness" --replay "$minimized" "${kernel_flags[@]}" --quiet 2>&1 | grep 'reason:' || true)
  if [[ -z $first || $first != "$second" ]]; then
    nondeterministic=$((nondeterministic + 1))
    echo "burnin: $name does not fail the same way twice" >&2
  fi
  echo "burnin: crash $name ($(wc -c < "$crash") -> $(wc -c < "$minimized") bytes) saved as corpus/regressions/$name.json"
done

# Memory growth: the median of the last quarter of samples against the first quarter's.
growth=$(awk -F'\t' 'NR > 1 {rss[n++] = $2} END {
  if (n < 8) {print "unknown"; exit}
  q = int(n / 4); a = 0; b = 0
  for (i = 0; i < q; i++) {a += rss[i]; b += rss[n - 1 - i]}
  printf "%.0f", (b - a) / q}' "$out/memory.tsv")

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/fuzzer.log" | awk '{s+=$2} END {print s+0}')
echo
echo "burn-in summary"
echo "  time:            $minutes min"
echo "  executions:      $executions"
echo "  corpus:          $(find "$out/corpus" -type f | wc -l) inputs"
echo "  crashes:         $found (nondeterministic: $nondeterministic)"
echo "  RSS growth:      ${growth} KiB (last quarter vs first quarter of $(($(wc -l < "$out/memory.tsv") - 1)) samples)"
status=0
((found == 0)) || status=1
if [[ $growth != unknown ]] && ((growth > 65536)); then
  echo "  memory:          GREW by more than 64 MiB: look for a leak"
  status=1
fi
exit $status
