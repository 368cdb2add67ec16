#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Downloads the Debian packages attnfuzz builds against into .gpu-deps/ (ignored by git), for a GPU
# machine that reaches no package registry: carry the folder there and scripts/gpu_validate.sh
# unpacks it into its build folder (never into /). The CUDA toolkit, CMake, ninja and a C++
# compiler are expected on that machine already.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  nlohmann-json3-dev libcli11-dev                  # header-only
  libtinyxml2-dev libtinyxml2-9                    # JUnit reports
  librapidcheck-dev libgtest-dev libgmock-dev      # static libraries
  libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
)
mkdir -p .gpu-deps
cd .gpu-deps
rm -f ./*.deb
apt-get download "${packages[@]}"
ls -la
du -sh .
