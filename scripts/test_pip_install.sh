#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `pip install .` as a kernel author would run it: this checkout into a fresh virtual environment
# (scikit-build-core builds fuzz_attention and the Python bridge with CMake, into the attnfuzz
# package; about 4 minutes on 2 cores), then a kernel's own pytest suite with the fixture the
# package's entry point registers, on the numpy reference kernel (tests/python/): it must pass, and
# fail with a replay line under a planted bug. Needs what scripts/install_deps.sh installs.
#   scripts/test_pip_install.sh [WORK_DIR]     (default: a temporary folder, removed after a pass)
# WORK_DIR must be new or empty, or a folder this script made before (it is emptied then); a
# failure keeps it, to look into.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-}
remove_after_a_pass=false
if [[ -z $work ]]; then
  work=$(mktemp -d)
  remove_after_a_pass=true
elif [[ -e $work && ! -d $work ]]; then
  echo "test_pip_install: $work is not a folder" >&2
  exit 3
elif [[ -d $work && -n $(ls -A "$work") && ! -f $work/.attnfuzz-pip-check ]]; then
  echo "test_pip_install: $work holds files this script did not make: give a new folder" >&2
  exit 3
fi
rm -rf "$work"
mkdir -p "$work"
touch "$work/.attnfuzz-pip-check"
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$root/build/CMakeCache.txt" 2>/dev/null || true)
"${python:-python3}" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check pytest==9.2.0
echo "test_pip_install: pip install $root (log: $work/pip.log)"
"$work/venv/bin/pip" install --disable-pip-version-check -v "$root" > "$work/pip.log" 2>&1 ||
  { tail -n 40 "$work/pip.log" >&2; exit 1; }

# A kernel author's suite: nothing on PYTHONPATH but the kernel's folder, no harness named.
mkdir -p "$work/suite"
cat > "$work/suite/test_my_attention.py" <<'PYTHON'
import reference_attention

CASES = [{"batch": 1, "heads": 4, "kv_heads": 2, "head_dim": 64, "seq_len_q": 70,
          "seq_len_k": [100, 128], "causal": [False, True]}]


def test_attention(attnfuzz):
    report = attnfuzz.check(reference_attention.attention, configs=CASES)
    assert report["summary"]["passed"] == 4


def test_attention_on_a_shipped_matrix(attnfuzz):
    attnfuzz.check(reference_attention.attention, configs="edges", flags=["--case", "edges/1?"])
PYTHON
cd "$work/suite"
export PYTHONPATH=$root/tests/python
unset ATTNFUZZ_HARNESS
"$work/venv/bin/python" -c 'import attnfuzz; print("test_pip_install: harness", attnfuzz.harness_path())'
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider test_my_attention.py
status=0
ATTNFUZZ_TEST_PLANT=gqa_modulo "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  test_my_attention.py > "$work/planted.log" 2>&1 || status=$?
if [[ $status -ne 1 ]] || ! grep -q 'replay a failing case' "$work/planted.log"; then
  cat "$work/planted.log" >&2
  echo "test_pip_install: the planted bug did not fail the suite with a replay line (exit $status)" >&2
  exit 1
fi
echo "test_pip_install: the installed package passes the reference kernel and fails its planted bug"
if $remove_after_a_pass; then rm -rf "$work"; fi
