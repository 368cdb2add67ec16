#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real libraries' attention as outside judges of the harness, on the CPU: each adapter of
# examples/python/ through fuzz_attention --kernel-py on corpus/matrix/pr.json (every case it
# supports), variants.json (the variants it has), a property search, every property replayed
# on corpus/real_kernels/ (cases real libraries once failed), and its backward pass through the
# library's autograd on backward.json; then the pytest example
# (examples/python/test_sdpa.py, the attnfuzz package's fixture on SDPA). Their packages go into a
# virtual environment of their own, build-tools/real-kernels (scripts/python_env.sh --venv: pinned,
# from PyPI, made from the interpreter the bridge was built against). Each run's output goes to
# validation-logs/real-kernels/ (ignored by git); docs/validation/real-kernels.md holds the
# verdicts. Exits 1 when a run's exit code is not the one docs/validation/real-kernels.md records
# for it (a known verdict is expected; anything new must be taken to one).
# --gpu runs the CUDA adapters instead (SDPA's CUDA backends, flex_attention on the GPU: device
# functions, CUDA tensors on the harness's stream), for a machine with a GPU and a PyTorch built
# for CUDA (first run on 2026-11-27: docs/validation/real-kernels.md).
#   scripts/real_kernels.sh [--build-dir build] [--budget 120] [--only sdpa_math,jax,...] [--gpu]
#                           [--python PATH]
# --python runs an interpreter that already has the libraries (a machine's own CUDA PyTorch, with
# numpy and ml_dtypes) instead of making the pinned environment; it must be the Python version the
# bridge was built against.
# --only names any of sdpa_math, sdpa_flash, sdpa, jax, flex_cpu, fp8_sdpa_math (a PyTorch fp8
# reference: examples/python/torch_fp8_attention.py) and pytest_example (with --gpu:
# sdpa_math_cuda, sdpa_flash_cuda, sdpa_efficient_cuda, sdpa_cudnn_cuda, sdpa_cuda, flex_cuda,
# flash_attn: the flash_attn package is not pinned here, its wheels follow the machine's CUDA and
# PyTorch: install it into build-tools/real-kernels for that machine first).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
budget=120
only=
gpu=false
python=
while (($#)); do
  case "$1" in
    --gpu) gpu=true; shift ;;
    --python) python=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --budget) budget=$2; shift 2
      [[ $budget =~ ^[1-9][0-9]*$ ]] || { echo "real_kernels: --budget takes whole seconds" >&2; exit 3; } ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "real_kernels: unknown argument '$1'" >&2; exit 3 ;;
  esac
done
# The libraries, pinned (numpy and ml_dtypes come with scripts/python_env.sh).
packages=(jax==0.8.1 jaxlib==0.8.1 torch==2.9.1)
if [[ -n $python ]]; then
  python=$(command -v "$python" || echo "$python")  # the harness takes a path
else
  python=$(bash scripts/python_env.sh --build-dir "$build_dir" --venv build-tools/real-kernels \
    "${packages[@]}" | tail -n 1)
fi
harness="$build_dir/fuzz_attention"
logs=validation-logs/real-kernels
$gpu && logs=validation-logs/real-kernels-gpu
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

# The kernels: name, the tensors it takes (--py-framework), its --kernel-py spec and, optionally, a
# factor on the property search's budget (flex compiles each new batch, head count, head dimension
# and dtype, a few seconds each: 60 s judged 3 of its forward properties).
kernels=(
  "sdpa_math torch examples/python/torch_sdpa.py:sdpa_math"
  "sdpa_flash torch examples/python/torch_sdpa.py:sdpa_flash"
  "sdpa torch examples/python/torch_sdpa.py:sdpa"
  "jax jax examples/python/jax_attention.py:dot_product_attention"
  "flex_cpu torch examples/python/flex_attention.py:flex_attention_cpu 5"
  "fp8_sdpa_math torch examples/python/torch_fp8_attention.py:fp8_sdpa_math"
)
# The exit code a kernel's variants.json run ends with: 2 (nothing ran) for one that has none of
# its variants (the fused CUDA backends take no attn_mask, so no window either); and its pr.json
# run's: 1 where docs/validation/real-kernels.md records a failure left failing (none now: the
# adapters decline the CUDA backends' recorded faults, naming that page).
declare -A variants_exit=()
declare -A pr_exit=()
# Its backward.json run's: 2 for one that declares no backward (flex_attention's does not compile on
# the CPU: docs/validation/real-kernels.md).
declare -A backward_exit=([flex_cpu]=2 [fp8_sdpa_math]=2)
if $gpu; then
  kernels=()
  for backend in sdpa_math sdpa_flash sdpa_efficient sdpa_cudnn sdpa; do
    kernels+=("${backend}_cuda torch examples/python/torch_sdpa.py:${backend}_cuda")
  done
  variants_exit=([sdpa_flash_cuda]=2 [sdpa_efficient_cuda]=2 [sdpa_cudnn_cuda]=2)
  kernels+=("flex_cuda torch examples/python/flex_attention.py:flex_attention_cuda 5")
  if "$python" -c 'import flash_attn' 2>/dev/null; then
    kernels+=("flash_attn torch examples/python/flash_attention.py:flash_attn_func")
  else
    echo "real_kernels: flash_attn is not installed in $python's environment: not run"
  fi
fi
for entry in "${kernels[@]}"; do
  read -r name framework spec factor <<<"$entry"
  [[ -n $only && ",$only," != *",$name,"* ]] && continue
  kernel=(--kernel-py "$spec" --py-framework "$framework")
  run "$name-pr" "${pr_exit[$name]:-0}" "${kernel[@]}" --configs corpus/matrix/pr.json --quiet
  run "$name-variants" "${variants_exit[$name]:-0}" "${kernel[@]}" \
    --configs corpus/matrix/variants.json --quiet
  run "$name-properties" 0 "${kernel[@]}" --properties --budget "$((budget * ${factor:-1}))" \
    --regressions "$logs/$name-regressions"
  run "$name-real-kernel-cases" 0 "${kernel[@]}" --properties --replay corpus/real_kernels
  # The backward pass on backward.json, through the library's autograd, on the CPU. (On a GPU,
  # pr.json's backward cases and the backward properties run the bridge's device path.)
  $gpu || run "$name-backward" "${backward_exit[$name]:-0}" "${kernel[@]}" \
    --configs corpus/matrix/backward.json --quiet
  # fp8 inputs, for a kernel that declares them: FlashAttention 3's forms.
  if [[ $name == fp8_* ]]; then
    run "$name-fp8" 0 "${kernel[@]}" --configs corpus/matrix/fp8.json --quiet
  fi
done
# The pytest path (the attnfuzz package from python/, its fixture on SDPA).
if ! $gpu && [[ -z $only || ",$only," == *",pytest_example,"* ]]; then
  status=0
  PYTHONPATH=$PWD/python ATTNFUZZ_HARNESS=$(realpath "$harness") "$python" -m pytest -q \
    -p no:cacheprovider -p attnfuzz.pytest_plugin examples/python/test_sdpa.py \
    >"$logs/pytest_example.txt" 2>&1 || status=$?
  verdict=ok
  if [[ $status != 0 ]]; then verdict="UNEXPECTED (expected 0)"; unexpected=$((unexpected + 1)); fi
  printf '%-40s exit %s (%s): %s\n' pytest_example "$status" "$verdict" \
    "$(tail -n 1 "$logs/pytest_example.txt")"
fi
echo "real_kernels: outputs in $logs; runs with an unexpected exit code: $unexpected"
((unexpected == 0))
