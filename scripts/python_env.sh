#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python environment of the bridge's tests (fuzz_attention --kernel-py): a virtual environment
# in build-tools/python (ignored by git) with numpy, ml_dtypes and pytest (the attnfuzz package's
# tests) from PyPI, pinned, made from the
# interpreter the bridge was built against (build/CMakeCache.txt's Python3_EXECUTABLE, else python3
# on PATH): a venv of another Python version could not load their compiled modules into it.
# --venv makes another environment the same way, with more pinned packages beside those three
# (scripts/real_kernels.sh's libraries). Idempotent. Prints the environment's python on its last
# line.
#   scripts/python_env.sh [--build-dir build] [--venv build-tools/python] [PACKAGE==VERSION...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ATTNFUZZ_BUILD_DIR:-build}
venv=build-tools/python
packages=(numpy==2.4.6 ml_dtypes==0.6.0 pytest==9.2.0)
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    -h|--help) sed -n '3,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    -*) echo "python_env: unknown argument '$1'" >&2; exit 3 ;;
    *) packages+=("$1"); shift ;;
  esac
done

python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
[[ -n $python ]] || python=python3
stamp="$venv/.attnfuzz-packages"
version_of() { "$1" -c 'import sys; print(sys.version)' | head -n 1; }
wanted="$(version_of "$python") ${packages[*]}"
# Another interpreter: a new environment. Other packages: pip installs what changed (a package
# added to the list does not download PyTorch again).
if [[ ! -x $venv/bin/python || $(version_of "$venv/bin/python") != $(version_of "$python") ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
if [[ ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
  printf '%s' "$wanted" > "$stamp"
fi
"$venv/bin/python" -c 'import numpy, ml_dtypes, pytest' >&2
echo "$PWD/$venv/bin/python"
