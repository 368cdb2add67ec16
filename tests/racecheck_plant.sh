#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ctest: compute-sanitizer racecheck reports the race of the missing_syncthreads plant. A race is
# caught by seeing the unordered shared-memory accesses, not by its (timing-dependent) effect on
# the output, so this, not the comparison, is the detection claim for that plant.
#   racecheck_plant.sh COMPUTE_SANITIZER FUZZ_ATTENTION MATRIX
# Exit 0: racecheck reported hazards (its exit code 99); 77 (skipped): no usable GPU here.
set -uo pipefail
sanitizer=$1 harness=$2 matrix=$3
one_case=(--configs "$matrix" --case sanitize/2 --kernel cuda_flash --oracle cpu --in-process --quiet)

"$harness" "${one_case[@]}" >/dev/null 2>&1
status=$?
if ((status == 2)); then
  echo "skipped: cuda_flash cannot run here (no usable GPU)"
  exit 77
fi
if ((status != 0)); then
  echo "the correct kernel did not pass the case (exit $status); nothing to compare with"
  exit 1
fi

"$sanitizer" --tool racecheck --error-exitcode 99 "$harness" "${one_case[@]}" \
  --plant missing_syncthreads
status=$?
if ((status != 99)); then
  echo "racecheck exited $status on the missing_syncthreads plant: it reported no hazard (expected 99)"
  exit 1
fi
echo "racecheck reported the planted race"
