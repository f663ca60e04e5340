#!/usr/bin/env bash
# Saves a screenshot of one or more HTML reports (omni-dp-inspect --html; docs/export.md) with
# headless Chromium (Debian: chromium). Several reports are shown side by side, each in its own
# column (a wrapper page of iframes), e.g. the two scheduling policies of one workload:
#
#   scripts/report_screenshot.sh OUT.png REPORT.html [REPORT.html ...]
#
# Environment: WIDTH (pixels per report column, 1150), HEIGHT (pixels, 1500), SCALE (device
# scale factor, 1). The PNG is written as Chromium renders it; keep those in docs/ under
# 300 KB (a smaller HEIGHT or WIDTH helps).
set -euo pipefail
(($# >= 2)) || { echo "usage: $0 OUT.png REPORT.html [REPORT.html ...]" >&2; exit 2; }
out=$1
shift
WIDTH=${WIDTH:-1150}
HEIGHT=${HEIGHT:-1500}
SCALE=${SCALE:-1}
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
[[ -n $browser ]] || { echo "$0: chromium is not installed (Debian: chromium)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/omnidp-screenshot-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if (($# == 1)); then
  page=$(realpath "$1")
  total_width=$WIDTH
else
  # One column per report; the wrapper lives beside nothing, so it refers to the reports by
  # absolute file:// URLs.
  page=$tmp/side-by-side.html
  total_width=$((WIDTH * $#))
  {
    echo '<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
    echo 'body{margin:0;display:flex}iframe{border:0;border-right:1px solid #ccc;'
    echo "width:${WIDTH}px;height:${HEIGHT}px}</style></head><body>"
    for r in "$@"; do echo "<iframe src=\"file://$(realpath "$r")\"></iframe>"; done
    echo '</body></html>'
  } >"$page"
fi
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
  --user-data-dir="$tmp/profile" --allow-file-access-from-files \
  --force-device-scale-factor="$SCALE" --window-size="$total_width,$HEIGHT" \
  --screenshot="$(realpath -m "$out")" "file://$page" 2>"$tmp/chromium.log" ||
  { cat "$tmp/chromium.log" >&2; exit 1; }
echo "$out: $(stat -c %s "$out") bytes ($total_width x $HEIGHT)"
