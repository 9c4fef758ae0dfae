#!/usr/bin/env python3
"""tests/bench/explain_ddp.py PLANDIR TABLEDIR... [--ddpc PATH] [--profile FILE]: `ddpc explain --compare`
against ddp_table.sh's runs, to judge a change to the cost model on measured data.

Each TABLEDIR is a ddp_table/ folder of a device call (the .r<R>.jsonl metrics of each plan); PLANDIR holds the
same plans compiled here with the world size of that call (`COMPILE_ONLY=1 NPROC=N RUNS="..." bash
tests/bench/ddp_table.sh`, then the t_<name>.bin files). For every plan of a TABLEDIR with a plan in PLANDIR,
round 1's metrics are compared (rank 0): the predicted and measured step and backward, and their errors. Last,
the median and largest |step error| over the rows."""
import argparse
import glob
import json
import os
import statistics
import subprocess


def compare(ddpc, plan, metrics, profile):
    """{phase: (predicted ms, measured ms, error %)} of rank 0 from `ddpc explain --compare --json`."""
    cmd = [ddpc, "explain", plan, "--compare", metrics, "--rank", "0", "--json"] + (["--profile", profile] if profile else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {}
    ranks = json.loads(r.stdout).get("ranks") or [{}]
    return {ph["phase"]: (ph["predicted_ms"], ph["measured_ms"], ph["error_pct"]) for ph in ranks[0].get("phases", [])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plandir")
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--ddpc", default="build/ddpc")
    ap.add_argument("--profile")
    a = ap.parse_args()
    errs = []
    print(f"{'table':34s} {'plan':34s} | {'step pred':>9s} {'meas':>7s} {'err %':>6s} | {'bwd pred':>8s} {'meas':>7s} {'err %':>6s}")
    for t in a.tables:
        for m in sorted(glob.glob(f"{t}/*.r1.jsonl")):
            name = os.path.basename(m)[: -len(".r1.jsonl")]
            plan = f"{a.plandir}/t_{name}.bin"
            if name.startswith("single") or not os.path.exists(plan):
                continue
            g = compare(a.ddpc, plan, m, a.profile)
            if "step" not in g:
                print(f"{t[-34:]:34s} {name:34s} | no comparison")
                continue
            s, b = g["step"], g.get("backward", (float("nan"),) * 3)
            errs.append(abs(s[2]))
            print(f"{t[-34:]:34s} {name:34s} | {s[0]:9.2f} {s[1]:7.2f} {s[2]:+6.1f} | {b[0]:8.2f} {b[1]:7.2f} {b[2]:+6.1f}")
    if errs:
        print(f"median |step error| {statistics.median(errs):.1f}% over {len(errs)} plans, largest {max(errs):.1f}%")


if __name__ == "__main__":
    main()
