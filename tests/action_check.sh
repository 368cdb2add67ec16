#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GitHub Action (action.yml) as a runner runs it, without GitHub (a CTest test): its script,
# scripts/action_run.sh, with the runner's files (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ENV,
# GITHUB_PATH) in a scratch folder and the already-built harness as attnfuzz-path (nothing is built):
#   - the example plugin on a shard of edges.json: exit 0, the job summary appended to (what an
#     earlier step wrote is kept), the outputs written, every report in the reports folder;
#   - cpu_flash with a planted bug: exit 1, each failing case saved as a one-case matrix that
#     replays failing with the plant and passing without it, replay.txt, an error annotation;
#   - nothing but skipped cases: exit 0 with a warning, and 2 with fail-on-skip (and without a
#     usable GPU, --backend cuda with fail-on-skip: exit 1);
#   - a missing plugin, or a flag of the action's own in extra-flags: exit 3.
#
#   tests/action_check.sh FUZZ_ATTENTION EXAMPLE_PLUGIN WORKDIR
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_attention=$(realpath "$1")
plugin=$(realpath "$2")
work=$3
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
script=$PWD/scripts/action_run.sh

fail() { echo "action_check: $*" >&2; exit 1; }
# The value of output NAME in the runner's output file (the last one written).
output() { sed -n "s/^$1=//p" "$GITHUB_OUTPUT" | tail -n 1; }

export GITHUB_OUTPUT=$work/github_output GITHUB_STEP_SUMMARY=$work/step_summary.md
export GITHUB_ENV=$work/github_env GITHUB_PATH=$work/github_path GITHUB_JOB=kernel
export INPUT_ATTNFUZZ_PATH=$fuzz_attention INPUT_WORKING_DIRECTORY=$work
echo "# An earlier step's summary" > "$GITHUB_STEP_SUMMARY"
: > "$GITHUB_OUTPUT"

# One step of the action: its output, status and log.
step() {
  local name=$1
  shift
  status=0
  bash "$script" "$@" > "$work/$name.log" 2>&1 || status=$?
  echo "action_check: $name: exit $status"
}

started=$SECONDS
step setup setup
((status == 0)) || fail "setup exited $status: $(cat "$work/setup.log")"
[[ $(output build) == false && $(output fuzz-attention) == "$fuzz_attention" ]] ||
  fail "setup did not take attnfuzz-path as the harness"
step build build
((status == 0)) || fail "build exited $status: $(cat "$work/build.log")"
grep -qx "$(dirname "$fuzz_attention")" "$GITHUB_PATH" || fail "build did not put the harness on PATH"

# 1. The example plugin passes; a shipped matrix named without its folder.
INPUT_KERNEL_LIB=$plugin INPUT_MATRIX=edges INPUT_SHARD=1/16 INPUT_BACKEND=cpu \
  INPUT_REPORTS_DIR=pass step pass run
((status == 0)) || fail "the example plugin: exit $status, expected 0: $(tail -n 20 "$work/pass.log")"
head -n 1 "$GITHUB_STEP_SUMMARY" | grep -qx "# An earlier step's summary" || fail "the earlier summary was lost"
grep -q '^## attnfuzz edges: PASS' "$GITHUB_STEP_SUMMARY" || fail "no PASS summary appended"
[[ $(output exit-code) == 0 && $(output result) == pass && $(output failed-cases) == 0 ]] ||
  fail "outputs of the passing run: $(cat "$GITHUB_OUTPUT")"
[[ $(output total-cases) =~ ^[1-9][0-9]*$ && $(output total-cases) == $(output passed-cases) ]] ||
  fail "case counts of the passing run: $(cat "$GITHUB_OUTPUT")"
[[ $(output report-json) == "$work/pass/report.json" && $(output reports-dir) == "$work/pass" ]] ||
  fail "report paths: $(cat "$GITHUB_OUTPUT")"
[[ $(output artifact-name) == attnfuzz-reports-kernel-shard-1-of-16 ]] || fail "artifact name $(output artifact-name)"
for report in report.json report.xml report.html stream.jsonl fuzz_attention.log; do
  [[ -s $work/pass/$report ]] || fail "no $report in the reports folder"
done
[[ ! -e $work/pass/failing-cases ]] || fail "failing cases saved for a passing run"

# 2. A planted bug fails; its failing cases are saved and replay as they failed.
INPUT_KERNEL=cpu_flash INPUT_MATRIX=$PWD/corpus/matrix/edges.json INPUT_SHARD=1/8 INPUT_BACKEND=cpu \
  INPUT_EXTRA_FLAGS=$'--plant causal_off_by_one\n--quiet' INPUT_REPORTS_DIR=plant step plant run
((status == 1)) || fail "the planted bug: exit $status, expected 1: $(tail -n 20 "$work/plant.log")"
[[ $(output exit-code) == 1 && $(output result) == fail ]] || fail "outputs of the failing run: $(cat "$GITHUB_OUTPUT")"
shopt -s nullglob
saved=("$work"/plant/failing-cases/*.json)
((${#saved[@]} > 0)) || fail "no failing case saved in $work/plant/failing-cases"
[[ $(output failed-cases) == "${#saved[@]}" ]] || fail "failed-cases $(output failed-cases), ${#saved[@]} saved"
[[ $(output failing-cases-dir) == "$work/plant/failing-cases" ]] || fail "failing-cases-dir $(output failing-cases-dir)"
grep -q -- '--replay failing-cases/.*--plant causal_off_by_one' "$work/plant/replay.txt" || fail "no replay command"
grep -q '^::error title=attnfuzz: edges/' "$work/plant.log" || fail "no error annotation"
grep -q '^## attnfuzz edges: FAIL' "$GITHUB_STEP_SUMMARY" || fail "no FAIL summary appended"
grep -q 'failing cases saved' "$GITHUB_STEP_SUMMARY" || fail "no note of the saved cases in the summary"
replay_status=0
"$fuzz_attention" --replay "$work/plant/failing-cases" --kernel cpu_flash --backend cpu \
  --plant causal_off_by_one --quiet --json "$work/replay.json" > "$work/replay.log" 2>&1 || replay_status=$?
((replay_status == 1)) || fail "the saved cases replay with exit $replay_status, expected 1"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]; sys.exit(s["failed"] != int(sys.argv[2]))' \
  "$work/replay.json" "${#saved[@]}" || fail "not every saved case fails again on replay"
replay_status=0
"$fuzz_attention" --replay "$work/plant/failing-cases" --kernel cpu_flash --backend cpu --quiet \
  > "$work/replay_clean.log" 2>&1 || replay_status=$?
((replay_status == 0)) || fail "the saved cases fail without the plant (exit $replay_status)"

# 3. Nothing could run (a head_dim no kernel of cpu_flash's has): a warning, or with fail-on-skip a
# failure. A matrix file relative to the working directory; the reports folder of the failing run
# again, whose failing cases must go.
cat > "$work/unsupported.json" << 'EOF'
{"name": "unsupported", "cases": [{"batch": 1, "heads": 1, "seq_len": 65, "head_dim": 192, "dtype": "fp16"}]}
EOF
INPUT_KERNEL=cpu_flash INPUT_MATRIX=unsupported.json INPUT_BACKEND=cpu INPUT_REPORTS_DIR=plant \
  step skip run
((status == 0)) || fail "nothing ran, without fail-on-skip: exit $status, expected 0: $(tail -n 20 "$work/skip.log")"
[[ $(output exit-code) == 2 && $(output result) == skip && $(output skipped-cases) == 1 ]] ||
  fail "outputs of the skipped run: $(cat "$GITHUB_OUTPUT")"
grep -q '^::warning title=attnfuzz::nothing could run' "$work/skip.log" || fail "no warning for a run of skips"
[[ ! -e $work/plant/failing-cases && ! -e $work/plant/replay.txt ]] || fail "the earlier run's failing cases were kept"
INPUT_KERNEL=cpu_flash INPUT_MATRIX=unsupported.json INPUT_BACKEND=cpu INPUT_FAIL_ON_SKIP=true \
  step skip_strict run
((status == 2)) || fail "nothing ran, with fail-on-skip: exit $status, expected 2"
# Without a usable GPU, --backend cuda skips every case as unable to run here: fail-on-skip fails it.
cuda_status=0
"$fuzz_attention" --configs "$work/unsupported.json" --backend cuda --quiet > /dev/null 2>&1 || cuda_status=$?
if ((cuda_status == 2)); then
  INPUT_MATRIX=edges INPUT_SHARD=1/64 INPUT_BACKEND=cuda INPUT_FAIL_ON_SKIP=true step no_gpu run
  ((status == 1)) || fail "--backend cuda without a GPU, fail-on-skip: exit $status, expected 1"
else
  echo "action_check: a usable GPU (or none needed): the no-GPU check is left out"
fi

# 4. A plugin that was not built: the harness's error code, with an annotation.
INPUT_KERNEL_LIB=build/libmissing.so step missing run
((status == 3)) || fail "a missing plugin: exit $status, expected 3"
grep -q '^::error title=attnfuzz::kernel-lib' "$work/missing.log" || fail "no annotation for a missing plugin"
[[ $(output exit-code) == 3 && $(output result) == error ]] || fail "outputs of a missing plugin: $(cat "$GITHUB_OUTPUT")"
# A report flag in extra-flags would reach the harness twice (its error): refused, and named.
INPUT_KERNEL=cpu_flash INPUT_EXTRA_FLAGS='--quiet --json=mine.json' step own_flag run
((status == 3)) || fail "--json in extra-flags: exit $status, expected 3"
grep -q '^::error title=attnfuzz::extra-flags: --json' "$work/own_flag.log" || fail "no annotation for --json in extra-flags"

echo "action_check: the action's script behaved as expected ($((SECONDS - started)) s)"
