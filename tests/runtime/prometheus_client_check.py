#!/usr/bin/env python3
"""Parses the coordinator's metrics textfile with the reference parser (prometheus_client).

  prometheus_client_check.py RUNTIME_TEST OUT_DIR

Runs Metrics.CoordinatorReportsCountsAndCurrentRequests of RUNTIME_TEST, which copies the file
it wrote to $OMNIDP_METRICS_SAMPLE, then reads it with
prometheus_client.parser.text_string_to_metric_families. Without prometheus_client (Debian:
python3-prometheus-client) it exits 77 (skipped), except under CI=true, where that fails.
"""
import math
import os
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    MSG = "prometheus_client is not installed (Debian: python3-prometheus-client)"
    if os.environ.get("CI") == "true":
        print(f"FAIL: {MSG} (CI=true: a failure)")
        sys.exit(1)
    print(f"SKIP: {MSG}")
    sys.exit(77)

test_binary, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
sample = os.path.join(out_dir, "omnidp.prom")
if os.path.exists(sample):
    os.remove(sample)
env = dict(os.environ, OMNIDP_METRICS_SAMPLE=sample)
subprocess.run([test_binary, "--gtest_filter=Metrics.CoordinatorReportsCountsAndCurrentRequests"],
               env=env, check=True, stdout=subprocess.DEVNULL)
with open(sample, encoding="utf-8") as f:
    text = f.read()

# prometheus_client names a counter family without its _total suffix (older releases kept it).
families = {}
for fam in text_string_to_metric_families(text):
    name = fam.name
    if fam.type == "counter" and name.endswith("_total"):
        name = name[: -len("_total")]
    families[name] = fam
expected = {
    "omnidp_requests_completed": "counter",
    "omnidp_requests_failed": "counter",
    "omnidp_requests_queued": "gauge",
    "omnidp_requests_running": "gauge",
    "omnidp_videos_per_minute": "gauge",
    "omnidp_elapsed_seconds": "gauge",
    "omnidp_eta_seconds": "gauge",
    "omnidp_rank_busy_fraction": "gauge",
    "omnidp_rank_current_request": "gauge",
}
errors = []
for name, kind in expected.items():
    if name not in families:
        errors.append(f"missing family {name}")
    elif families[name].type != kind:
        errors.append(f"{name}: type {families[name].type}, expected {kind}")
if set(families) != set(expected):
    errors.append(f"unexpected families: {sorted(set(families) - set(expected))}")


def value(family, **labels):
    for s in families[family].samples:
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise KeyError(f"{family} {labels}")


checks = [
    (value("omnidp_requests_completed"), 1.0),
    (value("omnidp_requests_queued"), 2.0),
    (value("omnidp_requests_running"), 2.0),
    (value("omnidp_videos_per_minute"), 3.0),
    (value("omnidp_rank_busy_fraction", rank="0"), 0.2),
    (value("omnidp_rank_busy_fraction", rank="1"), 0.0),
    (value("omnidp_rank_current_request", rank="0", request_id="r2"), 1.0),
    (value("omnidp_rank_current_request", rank="1", request_id="r1"), 1.0),
]
for got, want in checks:
    if got != want:
        errors.append(f"value {got}, expected {want}")
if math.isnan(value("omnidp_eta_seconds")):
    errors.append("omnidp_eta_seconds is NaN after a completion")
if errors:
    print("FAIL:\n  " + "\n  ".join(errors) + "\n--- file ---\n" + text)
    sys.exit(1)
print(f"OK: {len(families)} families parsed by prometheus_client")
