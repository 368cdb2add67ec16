#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GPU validation in one command, on a machine with an NVIDIA GPU. Builds for that GPU, then runs
# and records, commands and raw output, in validation-logs/<date>-<gpu>.md (ignored by git: a CI
# run uploads it as an artifact). The short record of a validation (what ran, figures, findings)
# goes in docs/validation/README.md by hand; a raw log that must stay is kept there compressed.
# Its steps come in groups, run in this order (the GPU-specific ones first, so that a run cut short
# by a time limit has recorded the most telling ones):
#   tests       the GPU tests of the suite (they skip on a machine without a GPU), in parallel
#   matrices    corpus/matrix/pr.json, inference.json, training.json and launch_limits.json on
#               cuda_flash: zero false alarms expected
#   plants      every planted bug of cuda_flash on corpus/matrix/pr.json: each must fail (exit 1)
#   examples    the example CUDA plugins: version 2 (every variant) passes variants.json and its
#               planted copy fails it; version 1 passes pr.json
#   sanitizers  compute-sanitizer memcheck and racecheck of cuda_flash on corpus/matrix/variants.json
#               (packed, paged, split-KV) and of both kernels on sanitize.json: no errors; racecheck
#               on the missing_syncthreads plant must report the race
#   gate        fuzz_attention --bench on corpus/matrix/bench.json's cases at 512 keys (NVIDIA's
#               readings in its report, checked present), then the performance gate
#               (scripts/bench_gate.sh) on them, side by side and against a stored baseline:
#               self-compares exit 0, slow_extra_pass plants exit 1 (--gate-repetitions times each)
#   timing      the seed's 27-case matrix end to end, timed, the whole case on the device and, for
#               comparison, checked on the host (--host-verification), and beside the seed's own
#               check in PyTorch (scripts/seed_style_check.py); pr.json end to end, timed;
#               bench_cuda_flash beside PyTorch's scaled_dot_product_attention
#               (scripts/bench_sdpa.py), also on bench.json's shapes
#   slow        pr.json on cuda_naive
#   suite       the whole test suite
# Each step is stopped after --step-timeout seconds. Matrix runs use --workers worker processes
# that share the one GPU (fuzz_attention --devices 0,0,...), since the CPU oracle, not the GPU,
# bounds their speed; timing runs use one.
#
#   scripts/gpu_validate.sh [--arch 90] [--build-dir build-gpu] [--only GROUP,...]
#                           [--skip GROUP,...] [--workers 8] [--gate-repetitions 3]
#                           [--step-timeout 300] [--no-werror] [--prebuilt] [--dry-run]
#
# --no-werror builds with warnings left as warnings (they stay in the record), for a compiler newer
# than CI's that warns where CI's does not. --quick is --skip slow; --tests-only is
# --only tests,suite. --dry-run prints every step's command without running anything. --prebuilt
# runs a build folder that was configured and built on another machine for this GPU's
# architecture, at the same source path (its tests name files by absolute paths), and carried
# here: configure and build are skipped; the .deb files of .gpu-deps/ still give it its libraries.
# Dependencies: where scripts/install_deps.sh can reach Debian's packages it is used; a machine with
# no registry takes the .deb files of scripts/fetch_gpu_deps.sh from .gpu-deps/, unpacked into the
# build folder (nothing is installed into /).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3

arch=90
build_dir=build-gpu
only=tests,matrices,plants,examples,sanitizers,gate,timing,slow,suite
skip=
dry_run=0
prebuilt=0
step_timeout=300
werror=ON
workers=$(( $(nproc) / 2 < 8 ? $(nproc) / 2 : 8 ))
((workers < 1)) && workers=1
gate_repetitions=3
while (($#)); do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --quick) skip=${skip:+$skip,}slow; shift ;;
    --tests-only) only=tests,suite; shift ;;
    --workers) workers=$2; shift 2 ;;
    --gate-repetitions) gate_repetitions=$2; shift 2 ;;
    --step-timeout) step_timeout=$2; shift 2 ;;
    --no-werror) werror=OFF; shift ;;
    --dry-run) dry_run=1; shift ;;
    --prebuilt) prebuilt=1; shift ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "gpu_validate: unknown argument '$1'" >&2; exit 3 ;;
  esac
done
for group in ${only//,/ } ${skip//,/ }; do
  case "$group" in
    tests|matrices|plants|examples|sanitizers|gate|timing|slow|suite) ;;
    *) echo "gpu_validate: unknown group '$group' (see --help)" >&2; exit 3 ;;
  esac
done
# wanted GROUP: whether the run includes that group of steps.
wanted() { [[ ",$only," == *",$1,"* && ",$skip," != *",$1,"* ]]; }
# --devices 0,0,...: $workers worker processes on GPU 0.
shared_gpu=$(printf '0%.0s,' $(seq "$workers")); shared_gpu=${shared_gpu%,}

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
gpu=$( (nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo no-gpu) | head -n 1)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-//; s/-$//')
record="validation-logs/$(date -u +%Y-%m-%d)-${slug}.md"
harness="$build_dir/fuzz_attention"
failures=0
last_status=0

# ---- the record: each step's command, exit code and raw output ----
if ((dry_run)); then
  record=/dev/stdout
else
  mkdir -p validation-logs
  {
    echo "# GPU validation: $gpu"
    echo
    echo "Recorded by \`scripts/gpu_validate.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
    echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)'), built for sm_$arch."
    echo "Groups: $only${skip:+ (skipping $skip)}; $workers workers on the GPU for matrix runs."
    echo "Each step shows its command, its exit code and its raw output."
  } >"$record"
fi

# step TITLE EXPECTED_EXIT COMMAND...: runs the command, appends it to the record, counts a
# failure when its exit code is not the expected one ("any" accepts every code).
step() {
  local title=$1 expected=$2
  shift 2
  if ((dry_run)); then
    printf '## %s (expect exit %s)\n    %s\n' "$title" "$expected" "$*"
    return 0
  fi
  echo "== $title" >&2
  local log started ended status
  log=$(mktemp)
  started=$(date +%s.%N)
  timeout --kill-after=10 "$step_timeout" "$@" >"$log" 2>&1
  status=$?
  last_status=$status
  ((status == 124)) && echo "[stopped after $step_timeout s by --step-timeout]" >>"$log"
  ended=$(date +%s.%N)
  local verdict=ok
  if [[ $expected != any && $status != "$expected" ]]; then
    verdict="UNEXPECTED (expected $expected)"
    failures=$((failures + 1))
  fi
  {
    echo
    echo "## $title"
    echo
    echo '```'
    echo "\$ $*"
    # Long outputs keep their head and tail; the middle is counted, not dropped silently.
    if (($(wc -l <"$log") > 400)); then
      head -n 150 "$log"
      echo "... [$(($(wc -l <"$log") - 300)) lines omitted] ..."
      tail -n 150 "$log"
    else
      cat "$log"
    fi
    echo '```'
    awk -v s="$status" -v v="$verdict" -v a="$started" -v b="$ended" \
      'BEGIN {printf "exit %s (%s), %.1f s\n", s, v, b - a}'
  } >>"$record"
  echo "   exit $status ($verdict)" >&2
  rm -f "$log"
  return 0
}

# ---- dependencies and build ----
cmake_args=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DATTNFUZZ_WERROR=$werror"
  "-DCMAKE_CUDA_ARCHITECTURES=$arch")
if [[ -d .gpu-deps ]] && ls .gpu-deps/*.deb >/dev/null 2>&1; then
  prefix="$PWD/$build_dir/deps"
  if ((!dry_run)); then
    mkdir -p "$prefix"
    for package in .gpu-deps/*.deb; do dpkg-deb -x "$package" "$prefix"; done
  fi
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix/usr"
    "-DOpenBLAS_INCLUDE_DIRS=$prefix/usr/include/$multiarch/openblas-pthread"
    "-DOpenBLAS_LIBRARIES=$prefix/usr/lib/$multiarch/openblas-pthread/libopenblas.so"
    "-DCMAKE_CXX_FLAGS=-isystem $prefix/usr/include")
  export LD_LIBRARY_PATH="$prefix/usr/lib/$multiarch/openblas-pthread:$prefix/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif command -v apt-get >/dev/null 2>&1 && ((!dry_run && !prebuilt)); then
  bash scripts/install_deps.sh >&2 || true
fi

step "GPU and toolkit" any bash -c "nvidia-smi; nvcc --version"
if ((prebuilt)); then
  if ((!dry_run)) && [[ ! -x $harness ]]; then
    echo "gpu_validate: --prebuilt: $harness is not there" >&2
    exit 3
  fi
  step "the carried build ($build_dir, built elsewhere for sm_$arch)" 0 bash -c \
    "grep -E '^CMAKE_CUDA_ARCHITECTURES|^CMAKE_BUILD_TYPE' '$build_dir/CMakeCache.txt'; ldd '$harness'"
else
  step "configure for sm_$arch" 0 cmake "${cmake_args[@]}"
  # -k 0: one run shows every compile error, not only the first.
  step "build" 0 cmake --build "$build_dir" --parallel "$(nproc)" -- -k 0
  if ((!dry_run && last_status != 0)); then
    echo "The build failed; no further step ran." >>"$record"
    echo "gpu_validate: the build failed; nothing else can run (see $record)" >&2
    exit 1
  fi
fi

# ---- the GPU tests, matrices, plants ----
if wanted tests; then
  gpu_tests='Cublas|Cuda|cuda_|IllegalAddress'
  # --no-tests=error: a filter that matches nothing (a renamed test, a build without CUDA) fails.
  step "GPU tests of the suite" 0 ctest --test-dir "$build_dir" -R "$gpu_tests" \
    --no-tests=error --parallel "$workers" --output-on-failure
fi
matrix_run=("$harness" --quiet --devices "$shared_gpu")
if wanted matrices; then
  step "pr.json on cuda_flash" 0 "${matrix_run[@]}" --configs corpus/matrix/pr.json \
    --kernel cuda_flash --json "$build_dir/pr-cuda_flash.json" --junit "$build_dir/pr-cuda_flash.xml"
  for matrix in inference training; do
    step "$matrix.json on cuda_flash (the variants at model shapes)" 0 "${matrix_run[@]}" \
      --configs "corpus/matrix/$matrix.json" --kernel cuda_flash
  done
  step "launch_limits.json on cuda_flash (past 65535 blocks in grid y or z: chunked launches)" 0 \
    "${matrix_run[@]}" --configs corpus/matrix/launch_limits.json --kernel cuda_flash
fi
if wanted plants; then
  plants=$("$harness" --list-kernels 2>/dev/null | awk '
    $1 == "cuda_flash" {inside = 1; next} /^[a-z_]+ \(/ {inside = 0}
    inside && /^    [a-z_0-9]+:/ && !/\[a slowdown/ && !/\[a bug of the backward pass/ {
      sub(":", "", $1); print $1}')
  ((dry_run)) && plants="EACH_PLANT_OF_CUDA_FLASH"
  for plant in $plants; do
    if [[ $plant == missing_syncthreads ]]; then  # a race: racecheck below is its detector
      step "plant $plant on edges.json (a race: the outputs may or may not show it)" any \
        "${matrix_run[@]}" --configs corpus/matrix/edges.json --kernel cuda_flash --plant "$plant"
      continue
    fi
    step "plant $plant on pr.json (must fail)" 1 "${matrix_run[@]}" --configs corpus/matrix/pr.json \
      --kernel cuda_flash --plant "$plant" --fail-fast
  done
fi
if wanted examples; then
  step "variants.json on the CUDA example plugin of ABI version 2" 0 "${matrix_run[@]}" \
    --configs corpus/matrix/variants.json \
    --kernel-lib "$build_dir/examples/libexample_cuda_attention_v2.so"
  step "variants.json on its copy with the window edge off by one (must fail)" 1 \
    "${matrix_run[@]}" --configs corpus/matrix/variants.json \
    --kernel-lib "$build_dir/examples/libexample_cuda_attention_v2_buggy.so"
  step "pr.json on the CUDA example plugin of ABI version 1" 0 "${matrix_run[@]}" \
    --configs corpus/matrix/pr.json --kernel-lib "$build_dir/examples/libexample_cuda_attention.so"
fi

# ---- sanitizers (in process: the tool then sees the kernels and sets the exit code itself) ----
if wanted sanitizers; then
  sanitize=(--configs corpus/matrix/sanitize.json --quiet --in-process)
  variants=(--configs corpus/matrix/variants.json --quiet --in-process --kernel cuda_flash --oracle cpu)
  step "memcheck, cuda_flash on variants.json (packed, paged, split-KV)" 0 compute-sanitizer \
    --tool memcheck --error-exitcode 99 --leak-check full "$harness" "${variants[@]}"
  step "racecheck, cuda_flash on variants.json" 0 compute-sanitizer --tool racecheck \
    --error-exitcode 99 "$harness" "${variants[@]}"
  for kernel in cuda_flash cuda_naive; do
    step "memcheck, $kernel" 0 compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full \
      "$harness" "${sanitize[@]}" --kernel "$kernel" --oracle cpu
    step "racecheck, $kernel" 0 compute-sanitizer --tool racecheck --error-exitcode 99 \
      "$harness" "${sanitize[@]}" --kernel "$kernel" --oracle cpu
  done
  step "memcheck, cuda_flash with write_past_output_end (the guard reports it first: exit 1)" 1 \
    compute-sanitizer --tool memcheck "$harness" "${sanitize[@]}" --kernel cuda_flash \
    --plant write_past_output_end --oracle cpu
  step "racecheck, cuda_flash with missing_syncthreads (must report hazards: exit 99)" 99 \
    compute-sanitizer --tool racecheck --error-exitcode 99 "$harness" "${sanitize[@]}" \
    --kernel cuda_flash --plant missing_syncthreads --oracle cpu --case sanitize/2
fi

# ---- the performance gate ----
if wanted gate; then
  # bench.json's own head_dim 64 cases at 512 keys (by id: bench/0, 1, 2, 4, 5): the seed's 27 cases
  # it includes and its long ones spend minutes of each run in the host's plain same-precision
  # reference while that runs on the CPU.
  gate_cases=(--case 'bench/[01245]')
  step "fuzz_attention --bench on bench.json's head_dim 64 cases at 512 keys (cuda_flash; GPU state in the report)" 0 \
    "$harness" --bench --kernel cuda_flash --quiet "${gate_cases[@]}" --json "$build_dir/bench.json"
  # Every GPU reading in the report (the run's, each case's): present, with clocks, none unavailable.
  step "NVIDIA's readings are in the --bench report" 0 python3 -c '
import json, sys
def readings(node):
    if isinstance(node, dict):
        if "sm_clock_mhz" in node or node.get("available") is False: yield node
        for value in node.values(): yield from readings(value)
    elif isinstance(node, list):
        for value in node: yield from readings(value)
found = list(readings(json.load(open(sys.argv[1]))))
for reading in found[:3]: print(json.dumps(reading))
print(len(found), "GPU readings")
sys.exit(0 if found and all(r.get("available") for r in found) else 1)' "$build_dir/bench.json"
  # Two or three runs per repetition, each verifying every case again: a step timeout per
  # repetition. Side by side (each case's calls interleaved with the correct kernel's), then
  # against a stored baseline.
  for gate_mode in side-by-side baseline; do
    step_timeout=$((step_timeout * gate_repetitions)) \
      step "the performance gate ($gate_mode) on those cases: $gate_repetitions self-compares and $gate_repetitions slow_extra_pass plants" 0 \
      env ATTNFUZZ_BUILD_DIR="$build_dir" bash scripts/bench_gate.sh --no-build --backend cuda \
      --kernel cuda_flash --mode "$gate_mode" --configs corpus/matrix/bench.json \
      --repetitions "$gate_repetitions" -- "${gate_cases[@]}" --bench-seconds 0.5
  done
fi

# ---- timing ----
if wanted timing; then
  step "seed27 matrix end to end (default backend: cuda_flash, the whole case on the device)" 0 \
    bash -c "time '$harness' --configs corpus/matrix/seed27.json --json '$build_dir/seed27.json'"
  step "seed27 matrix end to end, checked on the host (--host-verification), for comparison" 0 \
    bash -c "time '$harness' --configs corpus/matrix/seed27.json --host-verification \
      --json '$build_dir/seed27-host.json'"
  step "the seed's own check (SDPA against fp32, one allclose per config) beside attnfuzz" any \
    python3 scripts/seed_style_check.py --attnfuzz "$harness"
  step "pr.json on cuda_flash, one worker, end to end" 0 \
    bash -c "time '$harness' --configs corpus/matrix/pr.json --kernel cuda_flash \
      --json '$build_dir/pr-timing.json'"
  step "bench_cuda_flash" 0 "$build_dir/bench_cuda_flash"
  step "PyTorch scaled_dot_product_attention, same shapes" any python3 scripts/bench_sdpa.py
  if [[ -f $build_dir/bench.json ]]; then
    step "PyTorch SDPA on bench.json's shapes, beside cuda_flash" any \
      python3 scripts/bench_sdpa.py --report "$build_dir/bench.json"
  fi
fi

# ---- the slow rest ----
if wanted slow; then
  step "pr.json on cuda_naive" 0 "${matrix_run[@]}" --configs corpus/matrix/pr.json \
    --kernel cuda_naive --json "$build_dir/pr-cuda_naive.json"
fi
if wanted suite; then
  step "whole test suite" 0 ctest --test-dir "$build_dir" --parallel "$(nproc)" --output-on-failure
fi

if ((!dry_run)); then
  echo >>"$record"
  echo "Steps with an unexpected exit code: $failures" >>"$record"
  echo "gpu_validate: wrote $record; steps with an unexpected exit code: $failures" >&2
fi
((failures == 0))
