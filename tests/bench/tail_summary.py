#!/usr/bin/env python3
"""tests/bench/tail_summary.py TRACE.json: where a one-GPU step's optimizer updates ran against its backward.

Reads the Chrome trace of `ddprun --trace` (one span per instruction: tid = stream, ts/dur in us, args.op
for kernels; instants for the step's timers). The backward starts at the forward_end timer and ends with the last compute-stream span that is not an update (ADAMW); the step's
tail is from there to the last update's end. Per stream: the update spans, how many and how much of their
span time fell before and after the backward's end; then, for ten equal slices of the backward, the share of
each slice in which an update span of each stream was open (a span is open from its start event to its end
event, queueing for SMs included, so this is an upper bound on the updates' running time)."""
import json
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tail_summary.py TRACE.json")
    allev = json.load(open(sys.argv[1]))["traceEvents"]
    ev = [e for e in allev if e.get("ph") == "X" and e.get("cat") != "range"]
    timers = {e["name"]: e["ts"] for e in allev if e.get("ph") == "i"}
    if not ev:
        sys.exit("tail_summary.py: no spans in the trace")
    is_update = lambda e: e.get("args", {}).get("op") == "ADAMW"
    t0 = min(e["ts"] for e in ev)
    compute = [e for e in ev if e["tid"] == 0 and not is_update(e)]
    bwd_end = max(e["ts"] + e["dur"] for e in compute)
    first_bwd = timers.get("forward_end", t0)  # the step's own timer between the forward and the backward
    upd = defaultdict(list)
    for e in ev:
        if is_update(e):
            upd[e["tid"]].append(e)
    end = max([bwd_end] + [e["ts"] + e["dur"] for es in upd.values() for e in es])
    print(f"step spans {(end - t0) / 1e3:.2f} ms; backward from {(first_bwd - t0) / 1e3:.2f} to {(bwd_end - t0) / 1e3:.2f} ms; "
          f"tail after the backward {(end - bwd_end) / 1e3:.2f} ms")
    for tid in sorted(upd):
        es = sorted(upd[tid], key=lambda e: e["ts"])
        before = [e for e in es if e["ts"] + e["dur"] <= bwd_end]
        after = [e for e in es if e["ts"] + e["dur"] > bwd_end]
        tail_ms = sum(min(e["dur"], e["ts"] + e["dur"] - bwd_end) for e in after) / 1e3
        print(f"stream {tid}: {len(es)} updates, {sum(e['dur'] for e in es) / 1e3:.2f} ms of spans; {len(before)} ended "
              f"within the backward; {len(after)} ended after it, {tail_ms:.2f} ms of span after its end; first update "
              f"starts at {(es[0]['ts'] - t0) / 1e3:.2f} ms")
    n = 10
    width = (bwd_end - first_bwd) / n
    if width <= 0:
        return
    print("share of each tenth of the backward with an update span open, by stream:")
    print("tenth  " + " ".join(f"{k:>5d}" for k in range(1, n + 1)))
    for tid in sorted(upd):
        row = []
        for k in range(n):
            a, b = first_bwd + k * width, first_bwd + (k + 1) * width
            covered = sum(max(0.0, min(b, e["ts"] + e["dur"]) - max(a, e["ts"])) for e in upd[tid])
            row.append(min(1.0, covered / width))
        print(f"s{tid:<5d} " + " ".join(f"{x:5.2f}" for x in row))


if __name__ == "__main__":
    main()
