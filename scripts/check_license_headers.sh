#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every source, script, build and workflow file tracked by git names its license (BSD-3-Clause, the
# LICENSE file) in an SPDX tag in its first three lines. Prints the files that do not; exit 1 if any.
# Data (corpus/), documents (*.md) and generated files carry none.
set -euo pipefail
cd "$(dirname "$0")/.."
# Outside a git checkout (a source tarball) there is no list of tracked files: skipped (77).
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || { echo "check_license_headers: not a git checkout: skipped"; exit 77; }
missing=0
while IFS= read -r file; do
  [[ -f $file ]] || continue
  if ! head -n 3 "$file" | grep -q 'SPDX-License-Identifier: BSD-3-Clause'; then
    echo "no SPDX license tag: $file"
    missing=$((missing + 1))
  fi
done < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.c' '*.sh' '*.py' '*.cmake' '*.yml' '*.yaml' \
           'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run' '*Dockerfile' | grep -v '^corpus/')
echo "check_license_headers: $missing file(s) without the tag"
((missing == 0))
