#!/usr/bin/env python3
"""tests/bench/pipe_ranges.py TRACE.rank0.json TRACE.rank1.json ...: the pipeline's order on each worker as it
ran, one line per worker: every pp.fwd / pp.bwd / pp.bwdw range, pp.send / pp.recv instruction and the
optimizer range of the traced step as NAME@START+DURATION in ms from the step's first such span (the
workers' clocks are the host's, so their starts compare). What `ddpc plot timeline` draws, as text small
enough to come back from a device call."""
import json
import sys


def main():
    spans = {}
    for path in sys.argv[1:]:
        t = json.load(open(path))
        rank = t.get("otherData", {}).get("rank", path)
        ev = [e for e in t["traceEvents"] if e.get("ph") == "X" and
              (e.get("name", "").startswith("pp.") or e.get("name") == "optimizer")]
        spans[rank] = sorted(ev, key=lambda e: e["ts"])
    t0 = min(v[0]["ts"] for v in spans.values() if v)
    for rank, ev in sorted(spans.items()):
        parts = []
        for e in ev:
            n = e["name"].replace("pp.", "").replace(".chunk0", "")
            n = n.split(":")[0]  # pp.send.act.mb3:<tensor> -> send.act.mb3
            parts.append(f"{n}@{(e['ts'] - t0) / 1e3:.2f}+{e['dur'] / 1e3:.2f}")
        print(f"rank {rank}: " + " ".join(parts))


if __name__ == "__main__":
    main()
