#!/usr/bin/env bash
# The HTML report as a person sees it (docs/export.md, "HTML report"): a small real run (three
# ranks under mpirun, the synthetic model, live metrics on), its report written by
# omni-dp-inspect --html, then rendered by headless Chromium. Checks: the metrics textfile's
# final state; the page ran its script without an error (window.onerror writes into the DOM,
# --dump-dom shows it; the console log has no error); the SVG timeline holds one lane per rank.
#   inspect_browser_e2e.sh MPI_JOB_DRIVER OMNI_DP_INSPECT CONFIG.yaml WORKDIR
# Without Chromium (Debian: chromium, installed by scripts/setup.sh) the browser part is
# skipped (exit 77) after the rest passed, except under CI=true, where that fails.
set -euo pipefail
driver=$1 inspect=$2 config=$3 work=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

timeout 120 mpirun -np 3 --oversubscribe "$driver" "$config" \
  "output.dir=$work/run" "output.metrics_textfile=$work/omnidp.prom" \
  output.metrics_interval_s=0.5 >"$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "the run failed"; }

# Live metrics: the last rewrite is the final state (18 requests of configs/prompts/demo.jsonl).
grep -qx 'omnidp_requests_completed_total 18' "$work/omnidp.prom" || { cat "$work/omnidp.prom"; fail "metrics: completed"; }
grep -qx 'omnidp_requests_queued 0' "$work/omnidp.prom" || fail "metrics: queued"
[[ $(grep -c '^omnidp_rank_busy_fraction{rank="[0-2]"} ' "$work/omnidp.prom") == 3 ]] || fail "metrics: ranks"
ls -A "$work" | grep -q '\.tmp\.' && fail "metrics: a temporary file was left"

"$inspect" --html "$work/report.html" --thumbnails 3 "$work/run" >"$work/inspect.out" ||
  fail "omni-dp-inspect --html failed"
grep -q '^report: .* bytes, 18 requests)$' "$work/inspect.out" || { cat "$work/inspect.out"; fail "inspect output"; }
[[ $(grep -o '<g class="lane"' "$work/report.html" | wc -l) == 3 ]] || fail "the report has not 3 lanes"
# Every inline SVG is well-formed XML (what a browser's SVG parser needs), the timeline's lanes
# counted by the XML parser.
python3 - "$work/report.html" <<'PY' || fail "the report's SVG is not well-formed"
import re, sys, xml.etree.ElementTree as ET
html = open(sys.argv[1], encoding="utf-8").read()
svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
trees = [ET.fromstring(s) for s in svgs]
ns = "{http://www.w3.org/2000/svg}"
timeline = [t for t in trees if t.get("id") == "timeline"]
assert len(timeline) == 1, "one timeline"
lanes = [g for g in timeline[0].iter(ns + "g") if g.get("class") == "lane"]
assert [g.get("data-rank") for g in lanes] == ["0", "1", "2"], lanes
bars = [r for r in timeline[0].iter(ns + "rect") if (r.get("class") or "").startswith("bar")]
assert all(r.find(ns + "title") is not None for r in bars), "a bar without its hover title"
print(f"svg: {len(svgs)} well-formed, {len(lanes)} lanes, {len(bars)} bars with titles")
PY

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [[ -z $browser ]]; then
  msg="chromium is not installed (Debian: chromium; scripts/setup.sh installs it): browser check skipped"
  if [[ ${CI:-} == true ]]; then fail "$msg (CI=true: a failure)"; fi
  echo "SKIP: $msg"
  exit 77
fi

timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$work/profile" --enable-logging=stderr --v=0 \
  --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/console.log" ||
  { cat "$work/console.log"; fail "$browser failed"; }
grep -q 'data-report-status="ok"' "$work/dom.html" || { tail -20 "$work/console.log"; fail "the page's script did not run"; }
grep -q 'data-report-errors=' "$work/dom.html" && fail "script errors: $(grep -o 'data-report-errors="[^"]*"' "$work/dom.html")"
grep -q 'data-lanes="3"' "$work/dom.html" || fail "the browser does not see 3 timeline lanes: $(grep -o 'data-lanes="[^"]*"' "$work/dom.html")"
if grep -E 'CONSOLE.*(Uncaught|Error)' "$work/console.log"; then fail "console errors"; fi
echo "OK: report rendered by $browser, 3 lanes, no console error"
