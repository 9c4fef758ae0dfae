#!/usr/bin/env python3
"""tests/bench/grid_compare.py OLD NEW: the end-to-end grid of two device_grid.sh calls side by side.

For every grid_train_<size>_<prec>_<ctx>_<batch>.jsonl in both log folders: the mean step time of the timed
steps (as grid_summary.py computes it), the ratio NEW / OLD, and a mark where NEW is slower by more than the
noise allowance (--noise, default 0.02: the spread of one plan between calls at the power limit). Rows in
only one folder are listed as missing. The last line counts rows faster, within the allowance and slower."""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_summary import ORDER, stats, steps  # noqa: E402


def runs(folder):
    """{(size order, prec, ctx, batch, size): mean step ms of the timed steps} of one call's training plans."""
    out = {}
    for p in glob.glob(os.path.join(folder, "grid_train_*.jsonl")):
        size, prec, ctx, b = os.path.basename(p)[len("grid_train_"):-len(".jsonl")].split("_")
        rows, _ = steps(p)
        out[(ORDER.get(size, 9), prec, int(ctx), int(b), size)] = stats(rows, "step_ms")[0] if rows else None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--noise", type=float, default=0.02)
    a = ap.parse_args()
    old, new = runs(a.old), runs(a.new)
    print(f"{'size':6s} {'ctx':>5s} {'b':>3s} {'prec':4s} | {'old ms':>8s} {'new ms':>8s} {'new/old':>7s}")
    faster = same = slower = missing = 0
    for key in sorted(set(old) | set(new)):
        _, prec, ctx, b, size = key
        o, n = old.get(key), new.get(key)
        head = f"{size:6s} {ctx:5d} {b:3d} {prec:4s} |"
        if o is None or n is None:
            missing += 1
            print(f"{head} {'-' if o is None else f'{o:8.2f}':>8s} {'-' if n is None else f'{n:8.2f}':>8s}   missing")
            continue
        r = n / o
        mark = "  SLOWER" if r > 1 + a.noise else ""
        if r > 1 + a.noise:
            slower += 1
        elif r < 1 - a.noise:
            faster += 1
        else:
            same += 1
        print(f"{head} {o:8.2f} {n:8.2f} {r:7.3f}{mark}")
    print(f"{faster} faster, {same} within {a.noise:.0%}, {slower} slower by more, {missing} in one folder only")


if __name__ == "__main__":
    main()
