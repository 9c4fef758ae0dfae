#!/usr/bin/env python3
"""tests/bench/trace_summary.py TRACE.json [--top N]: where a traced step's time goes.

Reads the Chrome trace `ddprun --trace` writes (one span per instruction, with its opcode, op and, for
GEMMs, M x N x K) and prints a table: GEMMs grouped by their name without the layer prefix and by shape
(with TFLOP/s), kernels grouped by op, collectives by opcode; then totals per class. Times are the sum of
the spans' durations (CUDA events around each instruction on its stream)."""
import json
import re
import sys
from collections import defaultdict


def main():
    args = sys.argv[1:]
    top = 40
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: trace_summary.py TRACE.json [--top N]")
    # the range spans (cat "range": phases, layers, pipeline microbatches) enclose instructions: not counted
    ev = [e for e in json.load(open(args[0]))["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "range"]
    groups = defaultdict(lambda: [0.0, 0, 0.0, ""])  # ms, count, flops, class
    for e in ev:
        a = e.get("args", {})
        ms = e["dur"] / 1e3
        opc = a.get("opcode", "?")
        if opc == "gemm":
            name = re.sub(r"^layers\.\d+\.", "", e["name"])
            m, n, k = (int(v) for v in a["mnk"].split(" x "))
            key = f"gemm {name} [{a['mnk']}]"
            g = groups[key]
            g[2] += 2.0 * m * n * k
            g[3] = "gemm"
        elif opc == "kernel":
            op = a.get("op", "?")
            key = f"kernel {op}"
            cls = ("attention" if op.startswith("ATTN") else
                   "optimizer" if op in ("ADAMW", "SGD", "OPT_SCALARS") else
                   "norm" if "NORM" in op or op == "REDUCE_ROWS" else "other kernels")
            g = groups[key]
            g[3] = cls
        else:
            key = opc
            g = groups[key]
            g[3] = "communication" if e.get("cat") == "communication" else "other"
        g[0] += ms
        g[1] += 1
    total = sum(g[0] for g in groups.values())
    print(f"{'what':70s} {'ms':>9s} {'count':>6s} {'% busy':>7s} {'TFLOP/s':>8s}")
    for key, (ms, cnt, fl, _) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]:
        tf = f"{fl / (ms / 1e3) / 1e12:8.1f}" if fl else ""
        print(f"{key[:70]:70s} {ms:9.3f} {cnt:6d} {100 * ms / total:6.1f}% {tf:>8s}")
    cls = defaultdict(lambda: [0.0, 0.0])
    for ms, _, fl, c in groups.values():
        cls[c][0] += ms
        cls[c][1] += fl
    print(f"{'class':20s} {'ms':>9s} {'TFLOP/s':>8s}")
    for c, (ms, fl) in sorted(cls.items(), key=lambda kv: -kv[1][0]):
        tf = f"{fl / (ms / 1e3) / 1e12:8.1f}" if fl else ""
        print(f"{c:20s} {ms:9.3f} {tf:>8s}")
    print(f"{'sum of spans':20s} {total:9.3f}")


if __name__ == "__main__":
    main()
