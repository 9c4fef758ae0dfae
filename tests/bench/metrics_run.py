"""tests/bench/metrics_run.py: one `ddprun --metrics` file read for the benchmark summaries
(summary_sharding.py, summary_tensor.py, summary_ddp_table.py): the losses of every step; over the steps not
marked warmup (all of them if every step is): the median step_ms, tokens/s (the run line's tokens_per_step
over that median, else the median of the steps' tokens_per_s), the means of exposed_comm_ms, comm_ms,
overlap_ratio, optimizer_ms and tp_comm_ms (None where the metrics have none), the medians of forward_ms,
backward_ms and optimizer_ms (fwd, bwd, tail; NaN where the metrics have none), and the peak memory per rank
(the largest rank_peak_mem_GiB[r], or peak_mem_GiB for one rank); the run line's world, parallel, executor
and predicted step_ms; with 100 steps or more, windows(): the medians of step_ms, optimizer_ms and
backward_ms over steps 6-30 and 100-last (a short run's window against the power limiter's steady state,
within one run); the median and mean host_ms (the wall time per step; the mean is what throughput over wall time sees; NaN where the metrics have none); and the timed steps' energy (energy(): J per step, W per GPU, power-capped ms per
step; NaN where the metrics have none). by_plan() reads a whole ddp_table.sh folder."""
import glob
import json
import math
import os
import re
import statistics

NAN = float("nan")


def energy(steps):
    """(J/step, W per GPU, power-capped ms/step) over the timed steps of a metrics file's step lines: every
    rank's energy difference from the last warm-up step (or the first reading) to the last step over its
    counter's own span, summed over the ranks, times the timed steps' mean host_ms (ddprun's closing
    line does the same); NaN where the metrics have no energy."""
    warm = [x for x in steps if x.get("warmup")]
    t = [x for x in steps if not x.get("warmup")]
    try:
        a, b = (warm[-1] if warm else None), t[-1]
        e1, s1 = b["rank_energy_total_J"], b["rank_energy_span_s"]
        e0 = a["rank_energy_total_J"] if a else [0.0] * len(e1)
        s0 = a["rank_energy_span_s"] if a else [0.0] * len(e1)
        c0 = a["power_capped_total_ms"] if a else 0.0
        w = sum((x1 - x0) / (y1 - y0) for x1, x0, y1, y0 in zip(e1, e0, s1, s0))
        host = statistics.mean(x["host_ms"] for x in t)
        return w * host / 1e3, w / len(e1), (b["power_capped_total_ms"] - c0) / len(t)
    except (KeyError, TypeError, ZeroDivisionError, IndexError):
        return NAN, NAN, NAN


WINDOWS = ((6, 30), (100, None))


def windows(steps):
    """{(first, last): {step_ms, optimizer_ms, backward_ms}: the medians over the steps numbered first..last
    (None: to the end)}, or {} for a run of fewer than 100 steps."""
    if max(s["step"] for s in steps) < 100:
        return {}
    out = {}
    for a, b in WINDOWS:
        w = [s for s in steps if s["step"] >= a and (b is None or s["step"] <= b)]
        out[(a, b)] = {k: statistics.median(s.get(k, NAN) for s in w) for k in ("step_ms", "optimizer_ms", "backward_ms")}
    return out


def ours(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    run = next((l for l in lines if l.get("event") == "run"), {})
    steps = [l for l in lines if "step" in l]
    if not steps:
        raise ValueError("no step lines")
    t = [s for s in steps if not s.get("warmup")] or steps
    ms = statistics.median(s["step_ms"] for s in t)
    tps = run["tokens_per_step"] / (ms * 1e-3) if run.get("tokens_per_step") else statistics.median(
        s["tokens_per_s"] for s in t)
    per_rank = "rank_peak_mem_GiB" in t[0]
    world = run.get("world") or (len(t[0]["rank_peak_mem_GiB"]) if per_rank else 1)
    peak = ([max(s["rank_peak_mem_GiB"][r] for s in t) for r in range(len(t[0]["rank_peak_mem_GiB"]))] if per_rank
            else [max(s["peak_mem_GiB"] for s in t)])
    mean = lambda key: statistics.mean(s.get(key, 0.0) for s in t)
    joules, watts, capped = energy(steps)
    host = statistics.median(s["host_ms"] for s in t) if "host_ms" in t[0] else NAN
    host_mean = statistics.mean(s["host_ms"] for s in t) if "host_ms" in t[0] else NAN
    phase = lambda key: statistics.median(s[key] for s in t) if key in t[0] else NAN
    return dict(joules=joules, watts=watts, capped=capped, losses=[s["loss"] for s in steps], ms=ms, host=host, host_mean=host_mean, tps=tps, tokens=run.get("tokens_per_step"),
                exposed=mean("exposed_comm_ms"), comm=mean("comm_ms"), overlap=mean("overlap_ratio"),
                opt=mean("optimizer_ms"), fwd=phase("forward_ms"), bwd=phase("backward_ms"), tail=phase("optimizer_ms"),
                peak=peak,
                world=world, n=len(t), tp_comm=mean("tp_comm_ms") if "tp_comm_ms" in t[0] else None,
                parallel=run.get("parallel", ""), executor=run.get("executor", ""),
                predicted=(run.get("predicted") or {}).get("step_ms"), windows=windows(steps))


def by_plan(folder):
    """The runs of a ddp_table.sh folder (NAME.rR.jsonl): ({NAME: [ours() of each round, in round order]},
    [(NAME, error) for each file that could not be read])."""
    runs, bad = {}, []
    for p in sorted(glob.glob(os.path.join(folder, "*.r*.jsonl"))):
        name = re.sub(r"\.r\d+\.jsonl$", "", os.path.basename(p))
        try:
            runs.setdefault(name, []).append(ours(p))
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            bad.append((name, e))
    return runs, bad
