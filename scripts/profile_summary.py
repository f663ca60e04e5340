#!/usr/bin/env python3
"""Tabulates a Chrome trace written by `omni-dp-bench-model --profile FILE` (libtorch Kineto):
GPU time per kernel class and the top kernels, and how busy the GPU was over the traced span.

    python3 scripts/profile_summary.py trace.json [--top 25]
"""
import argparse
import collections
import json
import re

CLASSES = [  # first match wins
    ("attention", re.compile(r"flash|fmha|attention|cudnn|sdpa", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|cublas", re.I)),
    ("norm", re.compile(r"layer_norm|rms|norm", re.I)),
    ("copy/cast", re.compile(r"copy|cast|to_copy|memcpy|memset", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise|reduce", re.I)),
]


def kernel_class(name):
    for label, pattern in CLASSES:
        if pattern.search(name):
            return label
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not kernels:
        print("no GPU kernels in the trace")
        return
    total = sum(e["dur"] for e in kernels)
    start = min(e["ts"] for e in kernels)
    end = max(e["ts"] + e["dur"] for e in kernels)
    by_class = collections.Counter()
    by_name = collections.Counter()
    count = collections.Counter()
    for e in kernels:
        name = e["name"]
        by_class[kernel_class(name)] += e["dur"]
        short = name if len(name) < 110 else name[:107] + "..."
        by_name[short] += e["dur"]
        count[short] += 1
    span = end - start
    print(f"kernels {len(kernels)}  gpu_busy_ms {total / 1e3:.2f}  span_ms {span / 1e3:.2f}  busy {100 * total / span:.1f}%")
    print("\nclass            ms      share")
    for label, dur in by_class.most_common():
        print(f"{label:<14} {dur / 1e3:8.2f}  {100 * dur / total:6.1f}%")
    print(f"\ntop {args.top} kernels: ms, share, calls, name")
    for name, dur in by_name.most_common(args.top):
        print(f"{dur / 1e3:8.2f} {100 * dur / total:6.1f}% {count[name]:5d}  {name}")
    # The libtorch op that launched each kernel (Kineto links them by "External id").
    ops = {e["args"]["External id"]: e["name"] for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    by_op = collections.Counter()
    op_calls = collections.Counter()
    for e in kernels:
        op = ops.get(e.get("args", {}).get("External id"), "(no op)")
        by_op[op] += e["dur"]
        op_calls[op] += 1
    print(f"\ntop {args.top} launching ops: ms, share, kernels, op")
    for op, dur in by_op.most_common(args.top):
        print(f"{dur / 1e3:8.2f} {100 * dur / total:6.1f}% {op_calls[op]:5d}  {op}")


if __name__ == "__main__":
    main()
