#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GPU validation in one command, on a machine with an NVIDIA GPU. Builds for that GPU, then runs
# and records, commands and raw output, in validation-logs/<date>-<gpu>.md (ignored by git: a CI
# run uploads it as an artifact). The short record of a validation (what ran, figures, findings)
# goes in docs/validation/README.md by hand; a raw log that must stay is kept there compressed.
#   1. the GPU tests of the suite (they skip on a machine without a GPU)
#   2. corpus/matrix/pr.json on cuda_flash, cuda_naive and the example CUDA plugin: zero false
#      alarms expected
#   3. every planted bug of cuda_flash on corpus/matrix/pr.json: each must fail (exit 1); the
#      variants at model shapes, corpus/matrix/inference.json and training.json, on cuda_flash
#   4. compute-sanitizer memcheck and racecheck on corpus/matrix/sanitize.json (correct kernels:
#      no errors), memcheck of cuda_flash on corpus/matrix/variants.json, and racecheck on the
#      missing_syncthreads plant (it must report the race)
#   5. the seed's 27-case matrix end to end, timed
#   6. bench_cuda_flash beside PyTorch's scaled_dot_product_attention (scripts/bench_sdpa.py);
#      fuzz_attention --bench on corpus/matrix/bench.json (NVIDIA's readings in its report) with
#      SDPA on the same shapes; the performance gate (scripts/bench_gate.sh) 20 times over
#   7. the whole test suite
# The steps run in that order, the GPU-specific ones first, so that a run cut short by a time
# limit has recorded the most telling ones. Each step is stopped after --step-timeout seconds.
#
#   scripts/gpu_validate.sh [--arch 90] [--build-dir build-gpu] [--quick] [--step-timeout 300]
#                           [--no-werror] [--tests-only] [--dry-run]
#
# --no-werror builds with warnings left as warnings (they stay in the record), for a compiler newer
# than CI's that warns where CI's does not.
# --quick skips the pr.json run on cuda_naive (the slow part). --tests-only runs steps 1 and 7.
# --dry-run prints every step's command without running anything.
# Dependencies: where scripts/install_deps.sh can reach Debian's packages it is used; a machine with
# no registry takes the .deb files of scripts/fetch_gpu_deps.sh from .gpu-deps/, unpacked into the
# build folder (nothing is installed into /).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3

arch=90
build_dir=build-gpu
quick=0
tests_only=0
dry_run=0
step_timeout=300
werror=ON
while (($#)); do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --tests-only) tests_only=1; shift ;;
    --step-timeout) step_timeout=$2; shift 2 ;;
    --no-werror) werror=OFF; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "gpu_validate: unknown argument '$1'" >&2; exit 3 ;;
  esac
done

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
elif command -v apt-get >/dev/null 2>&1 && ((!dry_run)); then
  bash scripts/install_deps.sh >&2 || true
fi

step "GPU and toolkit" any bash -c "nvidia-smi; nvcc --version"
step "configure for sm_$arch" 0 cmake "${cmake_args[@]}"
# -k 0: one run shows every compile error, not only the first.
step "build" 0 cmake --build "$build_dir" --parallel "$(nproc)" -- -k 0
if ((!dry_run && last_status != 0)); then
  echo "The build failed; no further step ran." >>"$record"
  echo "gpu_validate: the build failed; nothing else can run (see $record)" >&2
  exit 1
fi

# ---- the GPU tests, matrices, plants ----
gpu_tests='CublasReference.*:CudaKernels.*:CudaFlash.*:CudaNaive.*:*CudaKernelOnEdges*'
gpu_tests+=':*CudaFlashPlant*:PluginKernel.TheCudaExample*:FuzzAttention.IllegalAddress*'
step "GPU tests of the suite" 0 "$build_dir/tests/attnfuzz_tests" "--gtest_filter=$gpu_tests"
if ((!tests_only)); then
step "pr.json on cuda_flash" 0 "$harness" --configs corpus/matrix/pr.json --kernel cuda_flash --quiet \
  --json "$build_dir/pr-cuda_flash.json" --junit "$build_dir/pr-cuda_flash.xml"
plants=$("$harness" --list-kernels 2>/dev/null | awk '
  $1 == "cuda_flash" {inside = 1; next} /^[a-z_]+ \(/ {inside = 0}
  inside && /^    [a-z_0-9]+:/ && !/\[a slowdown/ {sub(":", "", $1); print $1}')
((dry_run)) && plants="EACH_PLANT_OF_CUDA_FLASH"
for plant in $plants; do
  if [[ $plant == missing_syncthreads ]]; then  # a race: racecheck below is its detector
    step "plant $plant on edges.json (a race: the outputs may or may not show it)" any \
      "$harness" --configs corpus/matrix/edges.json --kernel cuda_flash --plant "$plant" --quiet
    continue
  fi
  step "plant $plant on pr.json (must fail)" 1 "$harness" --configs corpus/matrix/pr.json \
    --kernel cuda_flash --plant "$plant" --quiet --fail-fast
done
for matrix in inference training; do
  step "$matrix.json on cuda_flash (the variants at model shapes)" 0 "$harness" \
    --configs "corpus/matrix/$matrix.json" --kernel cuda_flash --quiet
done
step "pr.json on the example CUDA plugin (--kernel-lib)" 0 "$harness" --configs corpus/matrix/pr.json \
  --kernel-lib "$build_dir/examples/libexample_cuda_attention.so" --quiet

# ---- sanitizers (in process: the tool then sees the kernels and sets the exit code itself) ----
sanitize=(--configs corpus/matrix/sanitize.json --quiet --in-process)
step "memcheck, cuda_flash on variants.json (packed, paged, split-KV)" 0 compute-sanitizer \
  --tool memcheck --error-exitcode 99 --leak-check full "$harness" --configs \
  corpus/matrix/variants.json --quiet --in-process --kernel cuda_flash --oracle cpu
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

# ---- timing ----
step "seed27 matrix end to end (default backend: cuda_flash, cuBLAS oracle for large cases)" 0 \
  bash -c "time '$harness' --configs corpus/matrix/seed27.json --json '$build_dir/seed27.json'"
step "bench_cuda_flash" 0 "$build_dir/bench_cuda_flash"
step "PyTorch scaled_dot_product_attention, same shapes" any python3 scripts/bench_sdpa.py
step "fuzz_attention --bench on bench.json (cuda_flash; GPU state in the report)" 0 \
  "$harness" --bench --kernel cuda_flash --quiet --json "$build_dir/bench.json"
step "PyTorch SDPA on bench.json's shapes, beside cuda_flash" any \
  python3 scripts/bench_sdpa.py --report "$build_dir/bench.json"
step "the performance gate: 20 self-compares and 20 slow_extra_pass plants on cuda_flash" 0 \
  env ATTNFUZZ_BUILD_DIR="$build_dir" bash scripts/bench_gate.sh --no-build --backend cuda --kernel cuda_flash --repetitions 20 \
  -- --bench-seconds 0.5

fi

# ---- the slow rest ----
if ((!quick && !tests_only)); then
  step "pr.json on cuda_naive" 0 "$harness" --configs corpus/matrix/pr.json --kernel cuda_naive --quiet \
    --json "$build_dir/pr-cuda_naive.json"
fi
step "whole test suite" 0 ctest --test-dir "$build_dir" --parallel "$(nproc)" --output-on-failure

if ((!dry_run)); then
  echo >>"$record"
  echo "Steps with an unexpected exit code: $failures" >>"$record"
  echo "gpu_validate: wrote $record; steps with an unexpected exit code: $failures" >&2
fi
((failures == 0))
