#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pytest on a test file with the attnfuzz package from the source tree (python/) and the harness
# given: the package's own tests (tests/python/test_attnfuzz_package.py, in scripts/python_env.sh's
# environment) and the pytest example (examples/python/test_sdpa.py, in scripts/real_kernels.sh's,
# which has PyTorch). Exit 77 (CTest: skipped) without the environment, a module the test needs or
# the Python bridge.
#   tests/python/package_check.sh FUZZ_ATTENTION VENV TEST_FILE [MODULE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=$(realpath "$1")
venv=$2
test_file=$3
shift 3
modules=$(IFS=,; echo "pytest,numpy${*:+,$*}")
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import $modules" 2>/dev/null; then
  echo "package_check: skipped: no Python environment with $modules at $venv"
  exit 77
fi
if [[ ! -f $(dirname "$harness")/libattnfuzz_python.so ]]; then
  echo "package_check: skipped: the Python bridge was not built (Debian: python3-dev)"
  exit 77
fi
cd "$root"
PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH} ATTNFUZZ_HARNESS=$harness \
  exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p attnfuzz.pytest_plugin "$test_file"
