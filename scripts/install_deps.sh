#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs attnfuzz's build and test dependencies from Debian packages. Idempotent: packages that are
# already present are left alone, so it is cheap to call from every entry point (README, .ci/run).
# The CUDA toolkit is not installed here: CUDA targets build when nvcc is on PATH and are left out
# (with a notice from CMake) when it is not.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev            # GoogleTest: unit tests
  librapidcheck-dev       # RapidCheck: property-based fuzzing
  nlohmann-json3-dev      # JSON matrices and reports
  libtinyxml2-dev         # JUnit XML reports
  libcli11-dev            # command-line parsing
  libopenblas-dev         # float64 BLAS for the CPU oracle
  gcovr                   # scripts/coverage.sh: line and branch coverage
  python3-jsonschema      # scripts/check_schemas.py: reports and matrices against docs/schema/
  clang libclang-rt-dev   # libFuzzer and sanitizers
  shellcheck python3-venv # CI (.ci/run): actionlint from PyPI in a venv, shellcheck for run: blocks
  python3-dev             # the Python bridge (--kernel-py) embeds CPython
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  echo "install_deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
