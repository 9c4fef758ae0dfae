#!/usr/bin/env python3
"""tests/bench/summary_opt_tail.py LOGDIR SIZES CONTEXTS VARIANTS ROUNDS: the table of device_opt_tail.sh.

One row per model size, context, variant and round from LOGDIR/<size>_<ctx>_<variant>.r<round>.jsonl (the
metrics of ddprun): the medians of the timed steps' step, forward, backward and optimizer (the tail after
the backward) times, the mean power and the last step's loss."""
import json
import statistics
import sys


def row(path):
    st = [r for r in map(json.loads, open(path)) if "step" in r and not r.get("warmup", False)]
    if not st:
        return None
    med = lambda k: statistics.median(r[k] for r in st)
    return (med("step_ms"), med("forward_ms"), med("backward_ms"), med("optimizer_ms"),
            statistics.mean(r.get("power_W", 0.0) for r in st), st[-1]["loss"])


def main():
    if len(sys.argv) != 6:
        sys.exit("usage: summary_opt_tail.py LOGDIR SIZES CONTEXTS VARIANTS ROUNDS")
    d, sizes, ctxs, variants, rounds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(), int(sys.argv[5])
    print(f"{'size':5s} {'ctx':>5s} {'variant':8s} {'round':>5s} {'ms/step':>8s} {'fwd':>7s} {'bwd':>7s} {'opt tail':>8s} {'W':>5s} {'loss':>9s}")
    for size in sizes:
        for ctx in ctxs:
            for v in variants:
                for r in range(1, rounds + 1):
                    try:
                        x = row(f"{d}/{size}_{ctx}_{v}.r{r}.jsonl")
                    except (OSError, ValueError) as e:
                        x, why = None, str(e)
                    else:
                        why = "no timed steps"
                    if x is None:
                        print(f"{size:5s} {ctx:>5s} {v:8s} {r:5d} missing ({why})")
                        continue
                    print(f"{size:5s} {ctx:>5s} {v:8s} {r:5d} {x[0]:8.2f} {x[1]:7.2f} {x[2]:7.2f} {x[3]:8.2f} {x[4]:5.0f} {x[5]:9.5f}")


if __name__ == "__main__":
    main()
