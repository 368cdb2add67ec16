#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The layering check (scripts/check_include_layering.py) catches what it is for: in a copy of the
# sources, each planted include that runs against docs/architecture.md's layering (a folder
# reaching up, or across to one beside it) fails the check, which names the file and the line;
# with the plant taken out again the copy passes. A folder of sources that the table does not
# list fails the check too (nothing could say what it may include).
#   include_layering_check.sh REPOSITORY SCRATCH_FOLDER
set -euo pipefail
root=$1
scratch=$2
checker=$root/scripts/check_include_layering.py

rm -rf "$scratch"
mkdir -p "$scratch/docs"
cp "$root/docs/architecture.md" "$scratch/docs/"
for folder in core kernels oracle case perf matrix run options report fuzz cli tests bench \
  examples include; do
  cp -r "$root/$folder" "$scratch/"
done
python3 "$checker" --root "$scratch" > /dev/null

# file | the include planted at its end | why it runs against the layering
plants=(
  "core/clock.cpp|run/case_runner.h|core/ reaches up to run/"
  "kernels/cpu_flash.cpp|oracle/tolerance.h|kernels/ reaches across to oracle/"
  "report/report_table.cpp|fuzz/properties.h|report/ reaches across to fuzz/"
  "options/harness_options.cpp|report/run_report.h|options/ reaches across to report/"
  "fuzz/properties.cpp|cli/case_selection.h|fuzz/ reaches up to the program in cli/"
  "run/case_worker.cpp|fuzz/contained_property_check.h|run/ reaches up to fuzz/"
)
for plant in "${plants[@]}"; do
  IFS='|' read -r file header why <<< "$plant"
  cp "$scratch/$file" "$scratch/$file.kept"
  printf '#include "%s"\n' "$header" >> "$scratch/$file"
  line=$(wc -l < "$scratch/$file")
  if output=$(python3 "$checker" --root "$scratch"); then
    echo "FAIL: the check passed with $file including $header ($why)"
    exit 1
  fi
  if ! grep -qF "$file:$line: includes \"$header\"" <<< "$output"; then
    echo "FAIL: the check failed without naming $file:$line ($why); it said:"
    echo "$output"
    exit 1
  fi
  if [[ $(grep -c ': includes "' <<< "$output") != 1 ]]; then
    echo "FAIL: the check named more than the plant $file:$line; it said:"
    echo "$output"
    exit 1
  fi
  echo "found: $file:$line including $header ($why)"
  mv "$scratch/$file.kept" "$scratch/$file"
done
python3 "$checker" --root "$scratch" > /dev/null

# A folder of sources the table has no row for would go unchecked: the check refuses it.
mkdir -p "$scratch/newfolder"
printf '#include "cli/case_selection.h"\n' > "$scratch/newfolder/thing.cpp"
if output=$(python3 "$checker" --root "$scratch") ||
  ! grep -qF "newfolder/ holds sources but has no row" <<< "$output"; then
  echo "FAIL: a folder of sources without a row in the table was not named; the check said:"
  echo "$output"
  exit 1
fi
echo "found: newfolder/ holds sources but has no row in the table"
echo "include_layering_check: each of ${#plants[@]} planted includes was found, and only it; so was a folder without a row"
rm -rf "$scratch"
