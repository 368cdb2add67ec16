#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The steps of the GitHub Action (action.yml, docs/github-action.md) as one script, so that they
# also run by hand and under CTest (tests/action_check.sh):
#
#   scripts/action_run.sh setup    resolves the harness: an existing one (INPUT_ATTNFUZZ_PATH), or
#                                  the install prefix to build into and its cache key; names the
#                                  reports folder and the artifact
#   scripts/action_run.sh build    installs the Debian packages (scripts/install_deps.sh), builds
#                                  fuzz_attention from this checkout and installs it into the
#                                  prefix, unless the prefix already holds this very build (a cache
#                                  hit); puts its bin/ on PATH and the prefix on CMAKE_PREFIX_PATH
#                                  and PKG_CONFIG_PATH for the steps after it (ATTNFUZZ_PREFIX too)
#   scripts/action_run.sh run      runs fuzz_attention with --json, --junit, --html and --stream
#                                  into the reports folder and --markdown into the job summary,
#                                  saves each failing case there (failing-cases/*.json, one-case
#                                  matrices, with replay.txt beside them), annotates the failures,
#                                  writes the outputs, and exits with the verdict (below)
#   scripts/action_run.sh --help   prints this text
#
# The action's inputs come as environment variables INPUT_<NAME> ('-' as '_', capitals), all
# optional: ATTNFUZZ_PATH (an existing fuzz_attention binary, or an install prefix holding
# bin/fuzz_attention: nothing is built), PREFIX (where to install; default $RUNNER_TEMP/attnfuzz),
# CMAKE_ARGS (more arguments for CMake's configure step, split on whitespace), INSTALL_DEPS
# (true, false, or auto: true when building), WORKING_DIRECTORY (relative paths start here;
# default .), KERNEL_LIB, KERNEL, MATRIX (a file, or the name of a shipped matrix: pr, edges,
# seed27, ...; default the built-in pr.json), SHARD (I/N), BACKEND (auto, cpu, cuda), EXTRA_FLAGS
# (more fuzz_attention flags, split on whitespace), REPORTS_DIR (default attnfuzz-reports),
# ARTIFACT_NAME (default attnfuzz-reports-<job>[-shard-I-of-N]), FAIL_ON_SKIP (true or false).
# GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_ENV and GITHUB_PATH are written when set, as on a
# runner; without GITHUB_STEP_SUMMARY the Markdown summary goes to <reports>/summary.md.
# ATTNFUZZ_ACTION_CACHE_KEY hands setup's cache key to build; ATTNFUZZ_ACTION_BUILD_DIR is the
# build tree (default $RUNNER_TEMP/attnfuzz-build).
#
# `run` exits with the harness's exit code (0 every case that ran passed, 1 a case failed, 3 the
# harness's own error), except 2 (nothing could run: no usable GPU, or no case the kernel
# supports): that exits 0 with a warning annotation, unless FAIL_ON_SKIP is true. FAIL_ON_SKIP also
# passes --fail-on-skip to the harness: a case that could not run here (no usable GPU, out of
# memory) fails the run (exit 1); a shape the kernel declares unsupported stays a skip, so a run of
# nothing but those still exits 2, and then so does the step. The output exit-code is always the
# harness's own.
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() { sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
# An error of the action's own (a missing plugin, a bad input): exit 3, as the harness's own errors.
die() {
  echo "::error title=attnfuzz::$*"
  echo "action_run: $*" >&2
  if [[ ${subcommand:-} == run && -n ${GITHUB_OUTPUT:-} ]]; then
    printf '%s\n' exit-code=3 result=error >> "$GITHUB_OUTPUT"
  fi
  exit 3
}
is_true() {
  case ${1,,} in
    true | yes | 1 | on) return 0 ;;
    false | no | 0 | off | '') return 1 ;;
    *) die "'$1' is not a boolean (true or false)" ;;
  esac
}
# One output: to $GITHUB_OUTPUT on a runner, and to the log.
output() {
  echo "action_run: output $1=$2"
  if [[ -n ${GITHUB_OUTPUT:-} ]]; then echo "$1=$2" >> "$GITHUB_OUTPUT"; fi
}
# A word list from an input: split on whitespace (newlines too), no quoting, no globbing.
# shellcheck disable=SC2034 # `into` is a name reference: it fills the caller's array
words() {
  local -n into=$1
  into=()
  [[ -n ${2//[[:space:]]/} ]] || return 0
  read -r -d '' -a into <<< "$2" || true
}

subcommand=${1:-}
cd "${INPUT_WORKING_DIRECTORY:-.}" 2> /dev/null || die "working-directory '$INPUT_WORKING_DIRECTORY' does not exist (from $PWD)"

# The harness: INPUT_ATTNFUZZ_PATH (a binary, or a prefix with bin/fuzz_attention), else the
# install prefix. Sets harness, prefix (empty for a bare binary) and build (true: we build it).
resolve_harness() {
  build=false
  if [[ -n ${INPUT_ATTNFUZZ_PATH:-} ]]; then
    if [[ -f $INPUT_ATTNFUZZ_PATH && -x $INPUT_ATTNFUZZ_PATH ]]; then
      harness=$(realpath "$INPUT_ATTNFUZZ_PATH")
      prefix=
      # A binary inside an install prefix (<prefix>/bin/fuzz_attention) still has its prefix.
      if [[ -f $(dirname "$harness")/../share/attnfuzz/matrix/pr.json ]]; then
        prefix=$(realpath "$(dirname "$harness")/..")
      fi
    elif [[ -x $INPUT_ATTNFUZZ_PATH/bin/fuzz_attention ]]; then
      prefix=$(realpath "$INPUT_ATTNFUZZ_PATH")
      harness=$prefix/bin/fuzz_attention
    else
      die "attnfuzz-path '$INPUT_ATTNFUZZ_PATH' is neither a fuzz_attention binary nor a prefix with bin/fuzz_attention"
    fi
  else
    prefix=$(realpath -m "${INPUT_PREFIX:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/attnfuzz}")
    harness=$prefix/bin/fuzz_attention
    build=true
  fi
}

# The CMake arguments of the harness's build: fixed ones, then the user's.
build_arguments() {
  local -a user
  words user "${INPUT_CMAKE_ARGS:-}"
  cmake_args=(-DCMAKE_BUILD_TYPE=Release -DATTNFUZZ_BUILD_TESTS=OFF -DATTNFUZZ_BUILD_BENCH=OFF
              -DATTNFUZZ_BUILD_MATRIX_PARSER_FUZZER=OFF "${user[@]}")
}

# What the build depends on: the sources (not tests, documents, CI files or build trees; this
# script is one of them), the arguments, the system, the prefix, the CUDA toolkit and the GPUs'
# compute capabilities. Computed alike before and after install_deps.sh (no compiler version: a
# cached binary that no longer runs here is rebuilt anyway, see cmd_build).
cache_key() {
  build_arguments
  # With `uses: ./` the checkout is the workspace: the reports of an earlier run may lie in it.
  local reports
  reports=$(reports_dir)
  reports=./${reports#"$source_dir"/}
  local sources
  sources=$(cd "$source_dir" && find . \
    \( -path ./.git -o -path './build*' -o -path ./out -o -path ./tests -o -path ./docs \
       -o -path ./bench -o -path ./.github -o -path ./.ci -o -path ./corpus/regressions \
       -o -path ./corpus/matrix_parser -o -path ./corpus/saved_input -o -path "$reports" \
       -o -name '*.md' \) -prune -o -type f -print | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum)
  local system
  system=$(sed -n 's/^\(ID\|VERSION_ID\)=//p' /etc/os-release 2> /dev/null | tr -d '"' | paste -sd -)
  system=${system:-$(uname -s)}
  local nvcc=/usr/local/cuda/bin/nvcc
  command -v nvcc > /dev/null 2>&1 && nvcc=$(command -v nvcc)
  local hash
  hash=$({
    echo "$sources"
    printf '%s\n' "${cmake_args[@]}" "$prefix"
    "$nvcc" --version 2> /dev/null | tail -n 1 || true
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | sort -u || true
  } | sha256sum | cut -c 1-16)
  echo "attnfuzz-$system-$(uname -m)-$hash"
}

reports_dir() { realpath -m "${INPUT_REPORTS_DIR:-attnfuzz-reports}"; }

artifact_name() {
  if [[ -n ${INPUT_ARTIFACT_NAME:-} ]]; then
    echo "$INPUT_ARTIFACT_NAME"
  else
    local name="attnfuzz-reports-${GITHUB_JOB:-local}"
    [[ -n ${INPUT_SHARD:-} ]] && name+="-shard-${INPUT_SHARD//\//-of-}"
    echo "$name"
  fi
}

cmd_setup() {
  resolve_harness
  output fuzz-attention "$harness"
  output prefix "$prefix"
  output build "$build"
  if [[ $build == true ]]; then output cache-key "$(cache_key)"; fi
  output reports-dir "$(reports_dir)"
  output artifact-name "$(artifact_name)"
}

# Later steps find the harness, its header and its CMake package.
export_environment() {
  local bin_dir
  bin_dir=$(dirname "$harness")
  if [[ -n ${GITHUB_PATH:-} ]]; then echo "$bin_dir" >> "$GITHUB_PATH"; fi
  [[ -n $prefix ]] || return 0
  local pkgconfig
  pkgconfig=$(find "$prefix" -maxdepth 3 -type d -name pkgconfig -path '*/lib*/pkgconfig' | head -n 1)
  if [[ -n ${GITHUB_ENV:-} ]]; then
    {
      echo "ATTNFUZZ_PREFIX=$prefix"
      echo "CMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
      if [[ -n $pkgconfig ]]; then echo "PKG_CONFIG_PATH=$pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"; fi
    } >> "$GITHUB_ENV"
  fi
  echo "action_run: ATTNFUZZ_PREFIX=$prefix; $bin_dir on PATH"
}

cmd_build() {
  resolve_harness
  local install_deps=${INPUT_INSTALL_DEPS:-auto}
  [[ ${install_deps,,} == auto ]] && install_deps=$build
  if is_true "$install_deps"; then bash "$source_dir/scripts/install_deps.sh"; fi

  if [[ $build == true ]]; then
    local key stamp
    # The setup step's key (the one the cache step used), else computed here alike.
    key=${ATTNFUZZ_ACTION_CACHE_KEY:-$(cache_key)}
    stamp=$prefix/share/attnfuzz/action-build-key
    if [[ -x $harness && -f $stamp && $(< "$stamp") == "$key" ]] && "$harness" --version > /dev/null 2>&1; then
      echo "action_run: $prefix already holds this build ($key)"
    else
      # nvcc lives outside PATH in the CUDA toolkit's default location (as in scripts/build.sh).
      if ! command -v nvcc > /dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
        export PATH="/usr/local/cuda/bin:$PATH"
      fi
      build_arguments
      local build_dir=${ATTNFUZZ_ACTION_BUILD_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/attnfuzz-build}
      local generator=()
      command -v ninja > /dev/null 2>&1 && generator=(-G Ninja)
      rm -rf "$prefix"
      cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" "${cmake_args[@]}"
      # Only the harness: no tests, benchmarks, examples or nested libFuzzer builds.
      cmake --build "$build_dir" --target fuzz_attention --parallel "$(nproc)"
      cmake --install "$build_dir" --prefix "$prefix"
      echo "$key" > "$stamp"
    fi
  fi
  "$harness" --version
  export_environment
}

# Sets matrix_path: the file, or a shipped matrix by name (pr, edges.json, ...) when no such file
# exists here.
resolve_matrix() {
  local matrix=$1 dir candidate
  if [[ -f $matrix ]]; then matrix_path=$(realpath "$matrix"); return; fi
  for dir in ${prefix:+"$prefix/share/attnfuzz/matrix"} "$source_dir/corpus/matrix"; do
    for candidate in "$dir/$matrix" "$dir/$matrix.json"; do
      if [[ -f $candidate ]]; then matrix_path=$candidate; return; fi
    done
  done
  die "matrix '$matrix' is neither a file (from $PWD) nor a shipped matrix ($source_dir/corpus/matrix)"
}

# From the JSON report (or, when the run died before writing it, the stream): the counts as
# key=value lines, each failing case saved as a one-case matrix in failing-cases/, replay.txt, and
# an error annotation for each of the first 10 failures.
summarize() {
  python3 - "$@" << 'EOF'
import json, os, re, sys

reports, replay_flags = sys.argv[1], sys.argv[2:]
report_path, stream_path = os.path.join(reports, "report.json"), os.path.join(reports, "stream.jsonl")
results = []
if os.path.exists(report_path):
    with open(report_path) as f:
        results = json.load(f).get("results", [])
elif os.path.exists(stream_path):
    with open(stream_path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed run
            if isinstance(record, dict) and "case_id" in record:
                results.append(record)

counts = {status: sum(1 for r in results if r.get("status") == status) for status in ("pass", "fail", "skip")}
print(f"total={len(results)}")
print(f"passed={counts['pass']}")
print(f"failed={counts['fail']}")
print(f"skipped={counts['skip']}")

failures = [r for r in results if r.get("status") == "fail"]
if not failures:
    sys.exit(0)
cases_dir = os.path.join(reports, "failing-cases")
os.makedirs(cases_dir, exist_ok=True)
names_kernel = any(f in ("--kernel", "--kernel-lib") or f.startswith(("--kernel=", "--kernel-lib="))
                   for f in replay_flags)
names, lines = set(), []
for record in failures:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", record["case_id"])
    base, n = name, 1
    while name in names:
        n += 1
        name = f"{base}-{n}"
    names.add(name)
    case = dict(record["config"])
    # A matrix may name each case's kernel; a plugin's name is no built-in kernel's.
    if not names_kernel and record.get("kernel_name"):
        case["kernel"] = record["kernel_name"]
    with open(os.path.join(cases_dir, name + ".json"), "w") as f:
        json.dump({"name": name, "cases": [case]}, f, indent=1, sort_keys=True)
        f.write("\n")
    command = " ".join(["fuzz_attention", "--replay", f"failing-cases/{name}.json"] + replay_flags)
    lines.append(f"# {record['case_id']}: {record.get('reason', '')}\n{command}\n")
with open(os.path.join(reports, "replay.txt"), "w") as f:
    f.write("# Each failing case of this run, as a one-case matrix in failing-cases/; from the\n"
            "# folder that holds this file (the artifact), rerun one with its line below, or all\n"
            "# of them with: fuzz_attention --replay failing-cases " + " ".join(replay_flags) + "\n\n")
    f.write("\n".join(lines))

def escape(text):
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
for record in failures[:10]:
    print(f"::error title=attnfuzz: {escape(record['case_id'])} failed::"
          f"{escape(record.get('kernel_name', ''))}: {escape(record.get('reason', ''))}", file=sys.stderr)
if len(failures) > 10:
    print(f"::error title=attnfuzz::{len(failures) - 10} more failing cases: see the job summary", file=sys.stderr)
EOF
}

cmd_run() {
  resolve_harness
  [[ -x $harness ]] || die "no fuzz_attention at $harness: run 'scripts/action_run.sh build' first, or set attnfuzz-path"
  local reports summary_file artifact fail_on_skip=false
  reports=$(reports_dir)
  artifact=$(artifact_name)
  if is_true "${INPUT_FAIL_ON_SKIP:-false}"; then fail_on_skip=true; fi
  mkdir -p "$reports"
  # This run's files only: a stream appends, and stale failing cases would read as new ones.
  rm -rf "$reports/report.json" "$reports/report.xml" "$reports/report.html" "$reports/stream.jsonl" \
         "$reports/fuzz_attention.log" "$reports/replay.txt" "$reports/failing-cases" "$reports/summary.md"
  summary_file=${GITHUB_STEP_SUMMARY:-$reports/summary.md}

  local -a kernel_flags=() extra=() replay_flags=() args=()
  if [[ -n ${INPUT_KERNEL_LIB:-} ]]; then
    [[ -f $INPUT_KERNEL_LIB ]] || die "kernel-lib '$INPUT_KERNEL_LIB' does not exist (from $PWD): did build-command build it?"
    kernel_flags+=(--kernel-lib "$(realpath "$INPUT_KERNEL_LIB")")
    replay_flags+=(--kernel-lib "$INPUT_KERNEL_LIB")
  fi
  if [[ -n ${INPUT_KERNEL:-} ]]; then
    kernel_flags+=(--kernel "$INPUT_KERNEL")
    replay_flags+=(--kernel "$INPUT_KERNEL")
  fi
  local backend=${INPUT_BACKEND:-auto}
  [[ $backend == auto ]] || replay_flags+=(--backend "$backend")
  words extra "${INPUT_EXTRA_FLAGS:-}"
  # The extra flags that change how a case runs or is judged (--plant, --repeats, --oracle, ...)
  # belong in the replay commands; those that select cases or name outputs do not.
  local i=0
  while ((i < ${#extra[@]})); do
    local flag=${extra[i]}
    # The harness takes each of these once, and the action sets them itself.
    local own=
    case ${flag%%=*} in
      --json | --junit | --html | --stream | --markdown) own="reports-dir (and the job summary)" ;;
      --backend) own=backend ;;
      --configs) [[ -z ${INPUT_MATRIX:-} ]] || own=matrix ;;
      --shard) [[ -z ${INPUT_SHARD:-} ]] || own=shard ;;
      --kernel) [[ -z ${INPUT_KERNEL:-} ]] || own=kernel ;;
      --kernel-lib) [[ -z ${INPUT_KERNEL_LIB:-} ]] || own=kernel-lib ;;
    esac
    [[ -z $own ]] || die "extra-flags: ${flag%%=*} is the action's own (input $own): leave it out of extra-flags"
    case $flag in
      --configs | --shard | --case | --json | --junit | --markdown | --html | --stream | --resume | \
        --progress-every | --devices | --case-timeout | --memory-limit | --threads)
        i=$((i + 2)); continue ;;
      --configs=* | --shard=* | --case=* | --json=* | --junit=* | --markdown=* | --html=* | --stream=* | \
        --resume=* | --progress-every=* | --devices=* | --case-timeout=* | --memory-limit=* | --threads=* | \
        --quiet | --fail-fast | --fail-on-skip | --in-process)
        i=$((i + 1)); continue ;;
    esac
    replay_flags+=("$flag")
    i=$((i + 1))
  done

  args=("${kernel_flags[@]}" --backend "$backend")
  if [[ -n ${INPUT_MATRIX:-} ]]; then
    resolve_matrix "$INPUT_MATRIX"
    args+=(--configs "$matrix_path")
  fi
  if [[ -n ${INPUT_SHARD:-} ]]; then args+=(--shard "$INPUT_SHARD"); fi
  if [[ $fail_on_skip == true ]]; then args+=(--fail-on-skip); fi
  args+=(--json "$reports/report.json" --junit "$reports/report.xml" --html "$reports/report.html"
         --stream "$reports/stream.jsonl" --markdown "$summary_file" "${extra[@]}")

  echo "action_run: $harness ${args[*]}"
  local status=0
  set +e +o pipefail
  "$harness" "${args[@]}" 2>&1 | tee "$reports/fuzz_attention.log"
  status=${PIPESTATUS[0]}
  set -e -o pipefail

  local total='' passed='' failed='' skipped=''
  if command -v python3 > /dev/null 2>&1; then
    local line
    while IFS= read -r line; do
      case $line in
        total=*) total=${line#total=} ;;
        passed=*) passed=${line#passed=} ;;
        failed=*) failed=${line#failed=} ;;
        skipped=*) skipped=${line#skipped=} ;;
      esac
    done < <(summarize "$reports" "${replay_flags[@]}")
  else
    echo "::warning title=attnfuzz::python3 not found: no counts in the outputs, failing cases not saved"
  fi

  local result verdict=$status
  case $status in
    0) result=pass ;;
    1) result=fail ;;
    2)
      result=skip
      if [[ $fail_on_skip == true ]]; then
        echo "::error title=attnfuzz::nothing could run (exit 2): every case was skipped (see the job summary) and fail-on-skip is set"
      else
        echo "::warning title=attnfuzz::nothing could run (exit 2): every case was skipped (see the job summary); set fail-on-skip to fail on this"
        verdict=0
      fi ;;
    *) result=error
      echo "::error title=attnfuzz::fuzz_attention exited $status (3: the harness's own error: bad flag, unreadable matrix or plugin); see $reports/fuzz_attention.log" ;;
  esac
  if [[ $status == 0 && -n $skipped && $skipped != 0 ]]; then
    echo "::notice title=attnfuzz::$skipped of $total cases skipped (reasons in the job summary)"
  fi

  if [[ -d $reports/failing-cases ]]; then
    {
      echo
      echo "#### attnfuzz: failing cases saved"
      echo
      echo "Each failing case is in the artifact \`$artifact\` as a one-case matrix under \`failing-cases/\`;"
      echo "\`replay.txt\` there has a command for each. All of them, from the unpacked artifact:"
      echo
      echo '```'
      echo "fuzz_attention --replay failing-cases ${replay_flags[*]}"
      echo '```'
    } >> "$summary_file"
  fi

  output exit-code "$status"
  output result "$result"
  output total-cases "$total"
  output passed-cases "$passed"
  output failed-cases "$failed"
  output skipped-cases "$skipped"
  output reports-dir "$reports"
  output report-json "$(if [[ -f $reports/report.json ]]; then echo "$reports/report.json"; fi)"
  output failing-cases-dir "$(if [[ -d $reports/failing-cases ]]; then echo "$reports/failing-cases"; fi)"
  output artifact-name "$artifact"
  echo "action_run: fuzz_attention exited $status ($result); this step exits $verdict"
  return "$verdict"
}

case $subcommand in
  setup) cmd_setup ;;
  build) cmd_build ;;
  run) cmd_run ;;
  -h | --help) usage ;;
  *) usage >&2; exit 3 ;;
esac
