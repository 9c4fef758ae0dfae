#!/usr/bin/env python3
"""tests/bench/grid_energy.py LOGDIR PLANDIR [--ddpc PATH] [--profile FILE] [--idle W]: ddpc explain's time
and energy against one device_grid.sh call.

For every LOGDIR/grid_train_<tag>.jsonl with a compiled PLANDIR/<tag>.bin (device_grid.sh's plans, compiled
here by the same ddpc: GRID_COMPILE_ONLY=1), the measured step (the timed steps' mean) and joules above idle
per step (metrics_run.energy minus --idle W, default 118, times the step), against `ddpc explain --json`'s
simulated step, energy above idle and power floor (with --profile: that profile's, e.g. one `ddprun
--calibrate` wrote on the same GPU); then the median |error| of the simulated step, of the floor and of the
larger of the two (what ddpc explain predicts), over the rows whose timed steps span at least --min-span
seconds (default 0.3: the NVML counter moves about every 0.1 s, so shorter runs give no energy)."""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_summary import ORDER, stats, steps  # noqa: E402
from metrics_run import energy  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir")
    ap.add_argument("plandir")
    ap.add_argument("--ddpc", default="build/ddpc")
    ap.add_argument("--profile", help="a device profile for ddpc explain (default: the built-in one)")
    ap.add_argument("--idle", type=float, default=118.0)
    ap.add_argument("--min-span", type=float, default=0.3)
    a = ap.parse_args()
    rows = []
    for p in glob.glob(os.path.join(a.logdir, "grid_train_*.jsonl")):
        tag = os.path.basename(p)[len("grid_train_"):-len(".jsonl")]
        plan = os.path.join(a.plandir, tag + ".bin")
        if not os.path.exists(plan):
            print(f"{tag}: no plan {plan}", file=sys.stderr)
            continue
        rows_p, _ = steps(p)
        ms, _, ntimed = stats(rows_p, "step_ms")
        _, w, _ = energy(rows_p)
        j_above = (w - a.idle) * ms / 1e3 if w == w else float("nan")
        cmd = [a.ddpc, "explain", "--json"] + (["--profile", a.profile] if a.profile else []) + [plan]
        x = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        r0 = max(x["ranks"], key=lambda r: r["step_ms"])
        size = tag.split("_")[0]
        sim = r0.get("simulated_step_ms", r0["step_ms"])  # ddpc explain's step is the larger of it and the floor
        rows.append((ORDER.get(size, 9), tag, ms, w, j_above, sim, r0["energy"]["joules"],
                     r0["energy"]["power_floor_ms"], ntimed * ms / 1e3))
    rows.sort()
    print(f"{'plan':22s} {'meas ms':>8s} {'W':>5s} {'J>idle':>7s} | {'sim ms':>8s} {'J pred':>7s} {'floor':>8s} {'max':>8s} |"
          f" {'err sim':>8s} {'err floor':>9s} {'err max':>8s} {'err J':>7s}")
    errs = {"pred": [], "floor": [], "max": [], "J": []}
    for _, tag, ms, w, ja, pm, pj, fl, span in rows:
        mx = max(pm, fl)
        e = {"pred": pm / ms - 1, "floor": fl / ms - 1, "max": mx / ms - 1, "J": pj / ja - 1 if ja == ja else float("nan")}
        use = span >= a.min_span and w == w
        mark = "" if use else "  (short: no energy)"
        print(f"{tag:22s} {ms:8.2f} {w:5.0f} {ja:7.2f} | {pm:8.2f} {pj:7.2f} {fl:8.2f} {mx:8.2f} | {e['pred']:+8.1%} {e['floor']:+9.1%}"
              f" {e['max']:+8.1%} {e['J']:+7.1%}{mark}")
        if use:
            for k in errs:
                errs[k].append(abs(e[k]))
    if errs["pred"]:
        print(f"median |error| over {len(errs['pred'])} rows of at least {a.min_span} s: simulated step "
              f"{statistics.median(errs['pred']):.1%}, floor {statistics.median(errs['floor']):.1%}, the larger "
              f"{statistics.median(errs['max']):.1%}; energy above idle {statistics.median(errs['J']):.1%}")


if __name__ == "__main__":
    main()
