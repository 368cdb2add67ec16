#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real libraries' attention as outside judges of the harness, on the CPU: each adapter of
# examples/python/ through fuzz_attention --kernel-py on corpus/matrix/pr.json (every case it
# supports), variants.json (the variants it has), a property search, and every property replayed
# on corpus/real_kernels/ (cases real libraries once failed). Their packages go into a
# virtual environment of their own, build-tools/real-kernels (scripts/python_env.sh --venv: pinned,
# from PyPI, made from the interpreter the bridge was built against). Each run's output goes to
# validation-logs/real-kernels/ (ignored by git); docs/validation/real-kernels.md holds the
# verdicts. Exits 1 when a run's exit code is not the one docs/validation/real-kernels.md records
# for it (a known verdict is expected; anything new must be taken to one).
#   scripts/real_kernels.sh [--build-dir build] [--budget 120] [--only sdpa_math,jax]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
budget=120
only=
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "real_kernels: unknown argument '$1'" >&2; exit 3 ;;
  esac
done
# The libraries, pinned (numpy and ml_dtypes come with scripts/python_env.sh).
packages=(jax==0.8.1 jaxlib==0.8.1 torch==2.9.1)
python=$(bash scripts/python_env.sh --build-dir "$build_dir" --venv build-tools/real-kernels \
  "${packages[@]}" | tail -n 1)
harness="$build_dir/fuzz_attention"
logs=validation-logs/real-kernels
mkdir -p "$logs"
unexpected=0

# run NAME EXPECTED_EXIT ARGUMENTS...: one fuzz_attention run on a kernel, its output kept.
run() {
  local name=$1 expected=$2
  shift 2
  local status=0
  "$harness" --python "$python" "$@" >"$logs/$name.txt" 2>&1 || status=$?
  local verdict=ok
  if [[ $status != "$expected" ]]; then
    verdict="UNEXPECTED (expected $expected)"
    unexpected=$((unexpected + 1))
  fi
  printf '%-40s exit %s (%s): %s\n' "$name" "$status" "$verdict" "$(tail -n 1 "$logs/$name.txt")"
}

# The kernels: name, the tensors it takes (--py-framework) and its --kernel-py spec.
kernels=(
  "sdpa_math torch examples/python/torch_sdpa.py:sdpa_math"
  "sdpa_flash torch examples/python/torch_sdpa.py:sdpa_flash"
  "sdpa torch examples/python/torch_sdpa.py:sdpa"
  "jax numpy examples/python/jax_attention.py:dot_product_attention"
)
for entry in "${kernels[@]}"; do
  read -r name framework spec <<<"$entry"
  [[ -n $only && ",$only," != *",$name,"* ]] && continue
  kernel=(--kernel-py "$spec" --py-framework "$framework")
  run "$name-pr" 0 "${kernel[@]}" --configs corpus/matrix/pr.json --quiet
  run "$name-variants" 0 "${kernel[@]}" --configs corpus/matrix/variants.json --quiet
  run "$name-properties" 0 "${kernel[@]}" --properties --budget "$budget" \
    --regressions "$logs/$name-regressions"
  run "$name-real-kernel-cases" 0 "${kernel[@]}" --properties --replay corpus/real_kernels
done
echo "real_kernels: outputs in $logs; runs with an unexpected exit code: $unexpected"
((unexpected == 0))
