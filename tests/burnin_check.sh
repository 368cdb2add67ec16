#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/burnin.sh as a user runs it, for one minute, checked end to end (a CTest test):
#   tests/burnin_check.sh clean WORKDIR          the correct kernel: exit 0, a summary, no crash
#   tests/burnin_check.sh plant NAME WORKDIR     a planted bug: exit 1, a summary, and its first
#                                                crash kept minimized, as a JSON case that replays
#                                                failing (one: each minimization is seconds)
# The binaries come from ATTNFUZZ_BUILD_DIR (nothing is built); outputs stay in WORKDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1
plant=none
[[ $mode == plant ]] && { plant=$2; shift; }
work=$2
rm -rf "$work"
status=0
bash scripts/burnin.sh --minutes 1 --no-build --plant "$plant" --minimize 1 --out "$work/out" \
  --regressions "$work/regressions" > "$work.log" 2>&1 || status=$?
cat "$work.log"
fail() { echo "burnin_check: $*" >&2; exit 1; }
grep -q '^burn-in summary' "$work.log" || fail "no summary"
grep -Eq '^  executions: +[1-9]' "$work.log" || fail "no executions counted"
if [[ $mode == clean ]]; then
  ((status == 0)) || fail "exit $status on the correct kernel, expected 0"
  grep -q '^  crashes: *0 ' "$work.log" || fail "crashes on the correct kernel"
else
  ((status == 1)) || fail "exit $status with plant $plant, expected 1"
  shopt -s nullglob
  kept=("$work"/regressions/*.json)
  ((${#kept[@]} > 0)) || fail "no minimized case kept in $work/regressions"
  for case_file in "${kept[@]}"; do
    replay_status=0
    "${ATTNFUZZ_BUILD_DIR:-build}/fuzz_attention" --replay "$case_file" --plant "$plant" --quiet \
      > /dev/null 2>&1 || replay_status=$?
    ((replay_status == 1)) || fail "$case_file replays with exit $replay_status, expected 1"
  done
fi
echo "burnin_check: $mode as expected"
