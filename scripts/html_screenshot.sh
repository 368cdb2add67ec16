#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Renders an HTML report (fuzz_attention --html FILE) to a PNG with headless Chromium, to look at
# the page the way a reader will. Installs Debian's chromium first when no Chromium is on PATH (as
# root or with sudo, like scripts/install_deps.sh).
#
#   scripts/html_screenshot.sh REPORT.html OUT.png [WIDTH,HEIGHT]   # window default 1400,2000
set -euo pipefail

if (($# < 2 || $# > 3)); then
  echo "usage: $0 REPORT.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
report=$(realpath "$1")
screenshot=$(realpath -m "$2")
window_size=${3:-1400,2000}
if [[ ! -f $report ]]; then
  echo "html_screenshot: no such report: $1" >&2
  exit 2
fi

find_browser() {
  local candidate
  for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if ! browser=$(find_browser); then
  echo "html_screenshot: installing chromium" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
  browser=$(find_browser)
fi

mkdir -p "$(dirname "$screenshot")"
rm -f "$screenshot"
# A throwaway profile, so runs neither share state nor touch the user's own.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --disable-gpu --no-sandbox --hide-scrollbars \
  --user-data-dir="$profile" --window-size="$window_size" \
  --screenshot="$screenshot" "file://$report" >/dev/null 2>&1 || true
if [[ ! -s $screenshot ]]; then
  echo "html_screenshot: $browser wrote no screenshot of $report" >&2
  exit 1
fi
echo "$screenshot"
