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
#   plants      every planted bug of cuda_flash (or those --plants names) on corpus/matrix/pr.json
#               (launch_limits.json for work dropped past a grid limit): each must fail (exit 1)
#   backward    cuda_flash's backward pass on corpus/matrix/backward.json, its dQ in order and (with
#               --allow-nondeterminism) by atomics: zero false alarms; each backward plant of
#               cuda_flash on it must fail; compute-sanitizer memcheck and racecheck of it: no
#               errors
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
#               check in PyTorch (scripts/seed_style_check.py); what a run costs before its cases
#               (one case of it, and the matrix in one process); pr.json end to end, timed;
#               bench_cuda_flash beside PyTorch's scaled_dot_product_attention
#               (scripts/bench_sdpa.py), also on bench.json's shapes
#   libfuzzer   the libFuzzer target on cuda_flash: a burn-in (scripts/burnin.sh --backend cuda,
#               --burnin-minutes long, 0 for none: executions, coverage, the memory trace), then
#               each plant of cuda_flash that changes outputs, which the fuzzer must find within
#               --fuzz-seconds (--fuzz-plants names a few instead of all, none for none),
#               --fuzz-jobs searches at a time (they share the GPU)
#   bridge      the Python bridge rebuilt for --python's interpreter (a CUDA PyTorch's), then
#               PyTorch's CUDA kernels through it (scripts/real_kernels.sh --gpu; --real-kernels
#               names a few of them)
#   slow        pr.json on cuda_naive
#   suite       the whole test suite
# Each step is stopped after --step-timeout seconds. Matrix runs use --workers worker processes
# that share the one GPU (fuzz_attention --devices 0,0,...), since the CPU oracle, not the GPU,
# bounds their speed; timing runs use one.
#
#   scripts/gpu_validate.sh [--arch 90] [--build-dir build-gpu] [--only GROUP,...]
#                           [--skip GROUP,...] [--workers 8] [--gate-repetitions 3]
#                           [--step-timeout 300] [--no-werror] [--prebuilt] [--dry-run]
#                           [--burnin-minutes 10] [--fuzz-seconds 120] [--fuzz-plants A,B]
#                           [--fuzz-jobs 1] [--python python3] [--real-kernels A,B]
#                           [--real-kernels-budget 60] [--plants A,B] [--record FILE]
#
# --no-werror builds with warnings left as warnings (they stay in the record), for a compiler newer
# than CI's that warns where CI's does not. --quick is --skip slow,libfuzzer,bridge (the long
# burn-in, and PyTorch, which a runner may lack); --tests-only is --only tests,suite. --dry-run
# prints every step's command without running anything. --prebuilt runs a build folder that was
# configured and built on another machine for this GPU's architecture, at the same source path
# (its tests name files by absolute paths), and carried here: configure and build are skipped; the
# .deb files of .gpu-deps/ still give it its libraries. --record names the record's file, so that
# runs of different groups at the same time (sharing the GPU) keep a record each. Relative paths
# (--build-dir, --record) are taken from the repository's root.
# Dependencies: where scripts/install_deps.sh can reach Debian's packages it is used; a machine with
# no registry takes the .deb files of scripts/fetch_gpu_deps.sh from .gpu-deps/, unpacked into the
# build folder (nothing is installed into /).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3

arch=90
build_dir=build-gpu
only=tests,matrices,plants,backward,examples,sanitizers,gate,timing,libfuzzer,bridge,slow,suite
skip=
dry_run=0
prebuilt=0
step_timeout=300
werror=ON
workers=$(( $(nproc) / 2 < 8 ? $(nproc) / 2 : 8 ))
((workers < 1)) && workers=1
gate_repetitions=3
burnin_minutes=10
fuzz_seconds=120
fuzz_plants=
fuzz_jobs=1
only_plants=
record=
python=python3
real_kernels=
real_kernels_budget=60
while (($#)); do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --quick) skip=${skip:+$skip,}slow,libfuzzer,bridge; shift ;;
    --tests-only) only=tests,suite; shift ;;
    --workers) workers=$2; shift 2 ;;
    --gate-repetitions) gate_repetitions=$2; shift 2 ;;
    --burnin-minutes) burnin_minutes=$2; shift 2 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    --fuzz-plants) fuzz_plants=$2; shift 2 ;;
    --fuzz-jobs) fuzz_jobs=$2; shift 2 ;;
    --record) record=$2; shift 2 ;;
    --plants) only_plants=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --real-kernels) real_kernels=$2; shift 2 ;;
    --real-kernels-budget) real_kernels_budget=$2; shift 2 ;;
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
    tests|matrices|plants|backward|examples|sanitizers|gate|timing|libfuzzer|bridge|slow|suite) ;;
    *) echo "gpu_validate: unknown group '$group' (see --help)" >&2; exit 3 ;;
  esac
done
[[ $burnin_minutes =~ ^[0-9]+$ ]] ||
  { echo "gpu_validate: --burnin-minutes takes a whole number (0: no burn-in)" >&2; exit 3; }
[[ $fuzz_jobs =~ ^[1-9][0-9]*$ ]] ||
  { echo "gpu_validate: --fuzz-jobs takes a positive whole number" >&2; exit 3; }
# wanted GROUP: whether the run includes that group of steps.
wanted() { [[ ",$only," == *",$1,"* && ",$skip," != *",$1,"* ]]; }
# --devices 0,0,...: $workers worker processes on GPU 0.
shared_gpu=$(printf '0%.0s,' $(seq "$workers")); shared_gpu=${shared_gpu%,}

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
gpu=$( (nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo no-gpu) | head -n 1)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-//; s/-$//')
record=${record:-"validation-logs/$(date -u +%Y-%m-%d)-${slug}.md"}
harness="$build_dir/fuzz_attention"
failures=0
last_status=0

# ---- the record: each step's command, exit code and raw output ----
if ((dry_run)); then
  record=/dev/stdout
else
  mkdir -p validation-logs "$(dirname "$record")"
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
  prefix="$build_dir/deps"
  [[ $prefix == /* ]] || prefix="$PWD/$prefix"
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
# cuda_flash's plants that change a value (the slowdowns are the gate's; the backward pass's run
# on no case of a forward matrix).
cuda_flash_plants() {
  if ((dry_run)); then echo "EACH_PLANT_OF_CUDA_FLASH"; return; fi
  "$harness" --list-kernels 2>/dev/null | awk '
    $1 == "cuda_flash" {inside = 1; next} /^[a-z_]+ \(/ {inside = 0}
    inside && /^    [a-z_0-9]+:/ && !/\[a slowdown/ && !/\[a bug of the backward pass/ {
      sub(":", "", $1); print $1}'
}
# cuda_flash's plants of the backward pass.
cuda_flash_backward_plants() {
  if ((dry_run)); then echo "EACH_BACKWARD_PLANT_OF_CUDA_FLASH"; return; fi
  "$harness" --list-kernels 2>/dev/null | awk '
    $1 == "cuda_flash" {inside = 1; next} /^[a-z_]+ \(/ {inside = 0}
    inside && /^    [a-z_0-9]+:/ && /\[a bug of the backward pass/ {sub(":", "", $1); print $1}'
}
if wanted plants; then
  plants_to_run=${only_plants//,/ }
  [[ -n $plants_to_run ]] || plants_to_run=$(cuda_flash_plants)
  for plant in $plants_to_run; do
    if [[ $plant == missing_syncthreads ]]; then  # a race: racecheck below is its detector
      step "plant $plant on edges.json (a race: the outputs may or may not show it)" any \
        "${matrix_run[@]}" --configs corpus/matrix/edges.json --kernel cuda_flash --plant "$plant"
      continue
    fi
    # Work dropped past a grid dimension's 65535 blocks shows only on cases that large.
    matrix="pr"
    [[ $plant == *_past_grid_limit_* ]] && matrix=launch_limits
    step "plant $plant on $matrix.json (must fail)" 1 "${matrix_run[@]}" \
      --configs "corpus/matrix/$matrix.json" --kernel cuda_flash --plant "$plant" --fail-fast
  done
fi
if wanted backward; then
  step "backward.json on cuda_flash (dQ summed in order)" 0 "${matrix_run[@]}" \
    --configs corpus/matrix/backward.json --kernel cuda_flash \
    --json "$build_dir/backward-cuda_flash.json"
  step "backward.json on cuda_flash, nondeterminism allowed (dQ added atomically)" 0 \
    "${matrix_run[@]}" --configs corpus/matrix/backward.json --kernel cuda_flash \
    --allow-nondeterminism
  for plant in $(cuda_flash_backward_plants); do
    step "backward plant $plant on backward.json (must fail)" 1 "${matrix_run[@]}" \
      --configs corpus/matrix/backward.json --kernel cuda_flash --plant "$plant"
  done
  step "backward plant backward_dq_last_key_tile_only, dQ by atomics (must fail)" 1 \
    "${matrix_run[@]}" --configs corpus/matrix/backward.json --kernel cuda_flash \
    --plant backward_dq_last_key_tile_only --allow-nondeterminism
  backward_in_process=(--configs corpus/matrix/backward.json --quiet --in-process --kernel cuda_flash
    --oracle cpu)
  step "memcheck, cuda_flash's backward on backward.json" 0 compute-sanitizer --tool memcheck \
    --error-exitcode 99 --leak-check full "$harness" "${backward_in_process[@]}"
  step "racecheck, cuda_flash's backward on backward.json" 0 compute-sanitizer --tool racecheck \
    --error-exitcode 99 "$harness" "${backward_in_process[@]}"
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
  # What a run pays before its first case (the driver's start in the supervisor, which probes the
  # device, and in the worker; the worker's context), against what the cases add.
  step "one case of seed27 end to end (a run's cost before its cases)" 0 \
    bash -c "time '$harness' --configs corpus/matrix/seed27.json --case seed27/0"
  step "seed27 matrix end to end in one process (--in-process: one driver start)" 0 \
    bash -c "time '$harness' --configs corpus/matrix/seed27.json --in-process"
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

# ---- libFuzzer on the GPU ----
# find_plant FUZZER PLANT SECONDS: libFuzzer on cuda_flash with the plant until it finds it (the
# comparison, a guard or a fence failed a case: a crash file) or the time is up; exit 0 if found.
# Stopped --step-timeout seconds past its time, as a step would be.
find_plant() {
  local fuzzer=$1 plant=$2 seconds=$3 work started took
  work=$(mktemp -d)
  mkdir "$work/corpus"
  local search=("$fuzzer" --backend=cuda --kernel=cuda_flash --plant="$plant"
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=8192 -dict=corpus/attention.dict
    -artifact_prefix="$work/" "$work/corpus" corpus/seeds)
  echo "\$ ${search[*]}"
  started=$SECONDS
  timeout --kill-after=10 "$((seconds + step_timeout))" "${search[@]}" >"$work/log" 2>&1
  took=$((SECONDS - started))
  grep -E "^#[0-9]+" "$work/log" | tail -n 2
  grep -m 1 -E "reason:|fenced buffer|attnfuzz: kernel" "$work/log"
  if ls "$work"/crash-* >/dev/null 2>&1; then
    echo "found in $took s"; rm -rf "$work"; return 0
  fi
  echo "NOT found in $took s"; tail -n 20 "$work/log"; rm -rf "$work"; return 1
}
if wanted libfuzzer; then
  fuzzer="$build_dir/libfuzzer/fuzz_attention_libfuzzer"
  burnin_out="$build_dir/burnin-cuda"
  step "the libFuzzer target is built ($fuzzer)" 0 test -x "$fuzzer"
  if ((burnin_minutes > 0)); then
    ((dry_run)) || rm -rf "$burnin_out"
    step_timeout=$((burnin_minutes * 60 + step_timeout)) \
      step "burn-in: libFuzzer on cuda_flash for $burnin_minutes min (scripts/burnin.sh --backend cuda)" 0 \
      env ATTNFUZZ_BUILD_DIR="$build_dir" bash scripts/burnin.sh --no-build --backend cuda \
      --kernel cuda_flash --minutes "$burnin_minutes" --out "$burnin_out" \
      --regressions "$burnin_out/regressions"
    step "the burn-in's progress lines and memory trace (fuzzer and jobs' RSS, GPU memory used)" any \
      bash -c "grep -E '^#[0-9]+:' '$burnin_out/fuzzer.log' | sed -n '1p;\$p'; cat '$burnin_out/memory.tsv'"
  fi
  plants_to_find=${fuzz_plants//,/ }
  [[ $plants_to_find == none ]] && plants_to_find=
  if [[ -z $fuzz_plants ]]; then
    # Those the comparison sees: not the race (racecheck's), not the grid limits (no fuzzed case
    # has 65535 pairs under the fuzzer's work cap).
    plants_to_find=$(cuda_flash_plants | grep -vE '^missing_syncthreads$|_past_grid_limit_')
  fi
  # --fuzz-jobs searches at a time, each into a file of its own; each is recorded as a step once
  # all have ended (a step then only reads its search's output and exit code).
  searches=$(mktemp -d)
  running=0
  for plant in $plants_to_find; do
    if ((dry_run)); then
      printf '## search (%s at a time): find_plant %s %s %s\n' "$fuzz_jobs" "$fuzzer" "$plant" "$fuzz_seconds"
      continue
    fi
    (find_plant "$fuzzer" "$plant" "$fuzz_seconds" >"$searches/$plant.log" 2>&1
     echo $? >"$searches/$plant.status") &
    running=$((running + 1))
    if ((running >= fuzz_jobs)); then wait -n; running=$((running - 1)); fi
  done
  wait
  for plant in $plants_to_find; do
    # shellcheck disable=SC2016  # the script's own variables, expanded by its bash
    step "libFuzzer finds plant $plant on cuda_flash within $fuzz_seconds s ($fuzz_jobs at a time)" 0 \
      bash -c 'cat "$1.log"; exit "$(cat "$1.status")"' _ "$searches/$plant"
  done
  rm -rf "$searches"
fi

# ---- real libraries' CUDA kernels through the Python bridge ----
if wanted bridge; then
  python=$(command -v "$python" || echo "$python")
  # The carried bridge embeds the Python of the machine it was built on: build it again against
  # this machine's interpreter (the same minor version, which fuzz_attention checks).
  # shellcheck disable=SC2016  # the script's own variables, expanded by its bash
  step "the Python bridge rebuilt for $python" 0 bash -c '
    python=$1 build_dir=$2
    read -r include libdir version < <("$python" -c "import sys, sysconfig
print(sysconfig.get_paths()[\"include\"], sysconfig.get_config_var(\"LIBDIR\"),
      \"%d.%d\" % sys.version_info[:2])")
    echo "Python $version: headers $include, libpython in $libdir"
    "$python" -c "import torch; print(\"torch\", torch.__version__, \"CUDA\", torch.cuda.is_available())"
    g++ -std=c++20 -O2 -fPIC -shared -Wall -Wextra -Iinclude -I"$build_dir/generated" \
      -isystem "$include" bridges/python/attnfuzz_python_bridge.cpp -L"$libdir" \
      -lpython"$version" -Wl,-rpath,"$libdir" -o "$build_dir/libattnfuzz_python.so"' _ \
    "$python" "$build_dir"
  step "PyTorch's CUDA attention through the bridge (scripts/real_kernels.sh --gpu)" 0 \
    bash scripts/real_kernels.sh --gpu --build-dir "$build_dir" --python "$python" \
    --budget "$real_kernels_budget" ${real_kernels:+--only "$real_kernels"}
  # shellcheck disable=SC2016  # the script's own variables, expanded by its bash
  step "the real kernels' outputs" any bash -c \
    'for f in validation-logs/real-kernels-gpu/*.txt; do echo "== $f"; tail -n 25 "$f"; done'
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
