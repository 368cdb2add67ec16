#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Line and branch coverage of the harness's own code under the test suite: the coverage presets of
# CMakePresets.json (g++ --coverage, -O1, CPU only) configured, built and tested in
# build-coverage/, then gcovr over the harness's folders (case cli core fuzz kernels matrix oracle
# perf report run; not tests/, examples/ or third-party headers). Writes under out/coverage/:
# index.html (per file, with the source), summary.json (gcovr's), coverage.txt (per file) and
# summary.md (two figures, for $GITHUB_STEP_SUMMARY or the README). Counters from an earlier run
# are cleared first, so the figures are this run's alone.
#
#   scripts/coverage.sh                 # build, test, report
#   scripts/coverage.sh --report-only   # report on the counters build-coverage/ already holds
#   other arguments go to ctest, e.g. scripts/coverage.sh -R 'ReportHtml|CaseCodec'
set -euo pipefail
cd "$(dirname "$0")/.."

report_only=false
ctest_arguments=()
for argument in "$@"; do
  case $argument in
    --report-only) report_only=true ;;
    -h | --help)
      sed -n '3,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) ctest_arguments+=("$argument") ;;
  esac
done

out=out/coverage
harness_folders='(case|cli|core|fuzz|kernels|matrix|oracle|perf|report|run)/'

if ! $report_only; then
  bash scripts/install_deps.sh
  cmake --preset coverage
  cmake --build --preset coverage --parallel "$(nproc)"
  find build-coverage -name '*.gcda' -delete
  # A failing test is reported, but the coverage of the run is still written.
  ctest_status=0
  ctest --preset coverage --parallel "$(nproc)" "${ctest_arguments[@]}" || ctest_status=$?
fi

rm -rf "$out"
mkdir -p "$out"
# --exclude-unreachable-branches: branches gcc adds that no source line can take (the unwinding
# paths of every call that may throw are kept: a harness that turns exceptions into exit codes has
# real branches there, but gcov cannot tell them from the compiler's, so they are left out too).
gcovr --root . --object-directory build-coverage \
  --filter "$harness_folders" \
  --exclude-unreachable-branches --exclude-throw-branches \
  --print-summary \
  --txt "$out/coverage.txt" \
  --json-summary-pretty --json-summary "$out/summary.json" \
  --html-details "$out/index.html" | tee "$out/gcovr.log"

python3 - "$out/summary.json" > "$out/summary.md" <<'EOF'
import json
import sys

summary = json.load(open(sys.argv[1]))
print("### Coverage of the harness's own code (CPU build, test suite)\n")
print("| | covered | total | percent |")
print("|---|---:|---:|---:|")
for name, key in (("lines", "line"), ("branches", "branch")):
    covered, total = summary[f"{key}_covered"], summary[f"{key}_total"]
    print(f"| {name} | {covered} | {total} | {summary[f'{key}_percent']:.1f}% |")
EOF
cat "$out/summary.md"
echo "coverage: report in $out/index.html"
if ! $report_only && ((ctest_status != 0)); then
  echo "coverage: some tests failed (ctest exit $ctest_status); the figures are of what ran" >&2
  exit "$ctest_status"
fi
