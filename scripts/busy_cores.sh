#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A deliberate competing load: keeps N cores busy (default: every online core) with spinning
# processes until it is stopped (SIGTERM or SIGINT), then stops them all. scripts/bench_gate.sh
# --load starts and stops it around its runs, so that the gate is judged on a machine as busy as a
# shared CI runner can be.
#
#   scripts/busy_cores.sh [N]
set -euo pipefail
count=${1:-$(getconf _NPROCESSORS_ONLN)}
if ! [[ $count =~ ^[0-9]+$ ]] || ((count < 1 || count > 1024)); then
  echo "busy_cores: expected a number of cores from 1 to 1024, got '$count'" >&2
  exit 3
fi
spinners=()
stop() {
  kill "${spinners[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  exit 0
}
trap stop TERM INT
for ((core = 0; core < count; ++core)); do
  # A process of its own per core (bash's builtin loop: no fork per iteration).
  bash -c 'while :; do :; done' &
  spinners+=($!)
done
# Wakes for the trap every second; ends when the spinners are killed from outside too.
while kill -0 "${spinners[0]}" 2>/dev/null; do sleep 1; done
stop
