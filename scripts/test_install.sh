#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# From a build to a kernel author's project: installs the build into a fresh prefix, builds
# tests/install_consumer (a plugin made of examples/cpu_plugin's sources, found through
# find_package(attnfuzz)) against it, runs that plugin under the installed fuzz_attention on the
# installed edges.json (exit 0 expected), and checks the pkg-config file.
#
#   scripts/test_install.sh [BUILD_DIR] [WORK_DIR]     (defaults: build, a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
work=${2:-$(mktemp -d)}
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log"
for installed in bin/fuzz_attention include/attnfuzz/attnfuzz_plugin.h \
                 share/attnfuzz/matrix/pr.json share/attnfuzz/attention.dict share/attnfuzz/LICENSE \
                 lib/cmake/attnfuzz/attnfuzzConfig.cmake lib/pkgconfig/attnfuzz.pc; do
  [[ -e $prefix/$installed ]] || { echo "test_install: $installed was not installed" >&2; exit 1; }
done
"$prefix/bin/fuzz_attention" --version | head -n 1

cmake -S tests/install_consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DKERNEL_SOURCES="$PWD/examples/cpu_plugin" > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
cmake --build "$work/consumer" --target fuzz
echo "test_install: the consumer's plugin passed under the installed harness"

# pkg-config finds the header where this prefix put it, wherever the prefix is.
cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags attnfuzz)
include_dir=$(realpath -m "${cflags#-I}")
include_dir=${include_dir%% *}
[[ -f $include_dir/attnfuzz/attnfuzz_plugin.h ]] ||
  { echo "test_install: pkg-config --cflags gave '$cflags', which has no attnfuzz header" >&2; exit 1; }
echo "test_install: pkg-config --cflags attnfuzz: $cflags"
