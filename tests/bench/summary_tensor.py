#!/usr/bin/env python3
"""tests/bench/summary_tensor.py LOGS: the table of tests/bench/tensor_2gpu.sh from the files under LOGS.

Ours, from ours_<size>_<layout>.jsonl (ddprun --metrics; size large, xl or 2p7b = 2.7b; layout single, data2,
tensor2, tensor2_b8, fsdp2): median step_ms of the steps not marked warmup, tokens/s = the run line's
tokens_per_step over it, the mean exposed_comm_ms (the gradient collectives that outlast the backward, those
after the optimizer begins, and the tensor-parallel collectives, which run on the compute stream between the
layers: the metrics' tp_comm_ms, the "TP comm" column), peak memory per GPU = the largest
rank_peak_mem_GiB[r] of those steps. A run without metrics shows the last line of ours_<name>.log (a
schedule ddpc refused, a failure, a run left out for time).
Traces, from trace_<name>.rank<R>.json (ddprun --trace: one step): every collective span grouped by its
instruction name without layer, bucket and unit numbers (attn.output_proj.all_reduce, ln1.tp_copy.bwd,
all_reduce.bucket#, ...), with the stream, count, milliseconds and megabytes of the step (a trace without
metrics' tp_comm_ms gives the "TP comm" column: the sum of the collectives on the compute stream).
PyTorch, from torch_tp_<size>.log (TORCH_TP lines of tests/bench/torch_tp.py) and torch_fsdp_<size>.log
(TORCH_FSDP lines of tests/bench/torch_fsdp.py). The column "x torch TP" is tokens/s over PyTorch DTensor
TP's tokens/s at the same size (the issue's target: ours tensor=2 >= 1.3x)."""
import glob
import json
import os
import re
import sys
from collections import defaultdict

from metrics_run import ours  # noqa: E402  (tests/bench/metrics_run.py, beside this script)

SIZES = ["large", "xl", "2.7b"]
LAYOUTS = {  # file layout -> (label, order)
    "single": ("single GPU", 0),
    "data2": ("data=2 (DDP, 10 MB buckets)", 1),
    "tensor2": ("tensor=2", 2),
    "tensor2_b8": ("tensor=2, global batch 8", 3),
    "fsdp2": ("FSDP data=2", 4),
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "send", "recv")
TOLERANCE = 2e-2  # bf16: per-step losses of equivalent runs agree to this relative difference


def size_of(tag):
    return "2.7b" if tag == "2p7b" else tag


def split_name(name):
    """'2p7b_tensor2_b8' -> ('2.7b', 'tensor2_b8')."""
    tag, _, layout = name.partition("_")
    return size_of(tag), layout


def last_line(path):
    if not os.path.exists(path):
        return ""
    lines = [l for l in open(path, errors="replace").read().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def trace_groups(path):
    """{(group, stream): [ms, count, bytes]} of the collectives in one rank's trace of one step."""
    ev = json.load(open(path))["traceEvents"]
    groups = defaultdict(lambda: [0.0, 0, 0])
    for e in ev:
        a = e.get("args", {})
        if e.get("ph") != "X" or a.get("opcode") not in COLLECTIVES:
            continue
        name = re.sub(r"(bucket|unit)\d+", r"\1#", re.sub(r"^layers\.\d+\.", "", e.get("name", "?")))
        g = groups[(f"{a['opcode']} {name}", "compute" if e.get("tid") == 0 else "comm")]
        g[0] += e.get("dur", 0.0) / 1e3
        g[1] += 1
        g[2] += a.get("bytes", 0)
    return groups


def prefixed(path, prefix):
    rows = []
    for l in open(path, errors="replace") if os.path.exists(path) else []:
        if l.startswith(prefix + " "):
            try:
                rows.append(json.loads(l[len(prefix) + 1:]))
            except json.JSONDecodeError:
                pass
    return rows


def torch_rows(logs):
    """(size, label, row) of every TORCH_TP / TORCH_FSDP result or error line, and the notes."""
    rows, notes = [], []
    for p in sorted(glob.glob(f"{logs}/torch_*.log")):  # a log without any result line: why (its last line)
        if not prefixed(p, "TORCH_TP") and not prefixed(p, "TORCH_FSDP"):
            tag = os.path.basename(p)[:-len(".log")].rsplit("_", 1)
            kind = "PyTorch DTensor TP (and DDP)" if tag[0] == "torch_tp" else f"PyTorch ({tag[0]})"
            rows.append((size_of(tag[-1]), kind, {"error": f"no result in {os.path.basename(p)}: {last_line(p)}"}))
    for p in sorted(glob.glob(f"{logs}/torch_tp_*.log")):
        for r in prefixed(p, "TORCH_TP"):
            if "note" in r:
                notes.append(f"torch {r.get('mode')} {r.get('size')}: {r['note']}")
                continue
            label = "PyTorch DTensor TP, tensor=2" if r.get("mode") == "tp" else "PyTorch DDP data=2 (25 MB)"
            rows.append((r.get("size", "?"), label, r))
    for p in sorted(glob.glob(f"{logs}/torch_fsdp_*.log")):
        size = size_of(os.path.basename(p)[len("torch_fsdp_"):-len(".log")])
        for r in prefixed(p, "TORCH_FSDP"):
            if "note" in r:
                notes.append(f"torch fsdp2 {size}: {r['note']}")
                continue
            if r.get("mode") == "fsdp2":
                label = f"PyTorch FSDP2 data=2 reshard={str(r.get('reshard_after_forward')).lower()}"
            else:
                label = f"PyTorch {r.get('mode')} data=2"
            rows.append((r.get("size", size), label, r))
    return rows, notes


def fmt_peak(v):
    return "/".join(f"{g:.1f}" for g in v)


def main(logs):
    results, failures = {}, {}
    names = {os.path.basename(p)[len("ours_"):-len(".jsonl")] for p in glob.glob(f"{logs}/ours_*.jsonl")
             if not p.endswith(".partial.jsonl")}
    names |= {os.path.basename(p)[len("ours_"):-len(".log")] for p in glob.glob(f"{logs}/ours_*.log")}
    for n in names:
        p = f"{logs}/ours_{n}.jsonl"
        try:
            results[n] = ours(p)
        except (OSError, ValueError, KeyError, TypeError, IndexError, json.JSONDecodeError) as e:
            failures[n] = last_line(f"{logs}/ours_{n}.log") or f"no metrics ({e})"
    traces = {}
    for p in sorted(glob.glob(f"{logs}/trace_*.rank0.json")):
        n = os.path.basename(p)[len("trace_"):-len(".rank0.json")]
        try:
            traces[n] = trace_groups(p)
        except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
            print(f"trace {p}: unreadable ({e})")
    trows, notes = torch_rows(logs)
    torch_tp = {s: r["tokens_per_s"] for s, _, r in trows if r.get("mode") == "tp" and "tokens_per_s" in r}

    def order(n):
        size, layout = split_name(n)
        return (SIZES.index(size) if size in SIZES else 9, LAYOUTS.get(layout, ("", 9))[1], n)

    gpu = last_line(f"{logs}/gpu.txt")
    print(f"tensor parallelism on 2 GPUs ({gpu or 'GPU unknown'}); ours: ddprun --metrics, PyTorch: torchrun")
    head = (f"{'layout':34s} {'size':5s} {'ranks':>5s} {'tok/step':>8s} {'ms/step':>9s} {'pred ms':>8s} {'tokens/s':>9s} "
            f"{'x torch TP':>10s} {'exposed':>8s} {'TP comm':>8s}  peak GiB per GPU")
    print(head)
    print("-" * len(head))
    all_names = sorted(set(results) | set(failures), key=order)
    for size in SIZES + sorted({split_name(n)[0] for n in all_names} - set(SIZES)):
        for n in [n for n in all_names if split_name(n)[0] == size]:
            layout = LAYOUTS.get(split_name(n)[1], (split_name(n)[1], 9))[0]
            if n in failures:
                why = failures[n]
                kind = "refused by ddpc" if "must divide" in why else "failed or not run"
                print(f"{layout:34s} {size:5s} {kind}: {why[:150]}")
                continue
            o = results[n]
            ref = torch_tp.get(size)
            ratio = f"{o['tps'] / ref:10.2f}" if ref else f"{'-':>10s}"
            tp = traces.get(n)
            tpc = (f"{o['tp_comm']:8.2f}" if o["tp_comm"] is not None else
                   f"{sum(v[0] for (g, s), v in tp.items() if s == 'compute'):8.2f}" if tp else f"{'-':>8s}")
            pred = f"{o['predicted']:8.2f}" if isinstance(o["predicted"], (int, float)) else f"{'-':>8s}"
            print(f"{layout:34s} {size:5s} {o['world']:5d} {o['tokens'] or 0:8d} {o['ms']:9.2f} {pred} {o['tps']:9.0f} "
                  f"{ratio} {o['exposed']:8.2f} {tpc}  {fmt_peak(o['peak'])}")
        for s, label, r in trows:
            if s != size:
                continue
            if "error" in r:
                print(f"{label:34s} {size:5s} failed: {str(r['error'])[:150]}")
                continue
            if "ms_per_step" not in r:
                continue
            ref = torch_tp.get(size)
            ratio = f"{r['tokens_per_s'] / ref:10.2f}" if ref else f"{'-':>10s}"
            tok = r.get("tokens_per_step") or round(r["tokens_per_s"] * r["ms_per_step"] * 1e-3)
            peak = "/".join(f"{a:.1f}({b:.1f})"
                            for a, b in zip(r.get("peak_alloc_GiB", []), r.get("peak_reserved_GiB", [])))
            print(f"{label:34s} {size:5s} {r.get('world', 0):5d} {tok:8d} {r['ms_per_step']:9.2f} {'-':>8s} "
                  f"{r['tokens_per_s']:9.0f} {ratio} {'-':>8s} {'-':>8s}  {peak}")

    print()
    print("== the target: ours tensor=2 >= 1.3 x PyTorch DTensor TP tokens/s")
    for size in SIZES:
        n = f"{'2p7b' if size == '2.7b' else size}_tensor2"
        if n in results and size in torch_tp:
            x = results[n]["tps"] / torch_tp[size]
            print(f"{size}: ours {results[n]['tps']:.0f} tokens/s, PyTorch TP {torch_tp[size]:.0f}: {x:.2f}x "
                  f"({'met' if x >= 1.3 else 'NOT met'})")
        elif size != "xl":
            print(f"{size}: no comparison (ours tensor=2 {'ran' if n in results else 'missing'}, PyTorch TP "
                  f"{'ran' if size in torch_tp else 'missing'})")
    why = failures.get("xl_tensor2", "")
    print("xl: no tensor=2 row: XL has 25 heads, which 2 tensor ranks cannot split (heads, d_ff and vocab must be "
          "divisible by the tensor ranks)" + (f"; ddpc: {why.split(': ', 1)[-1][:120]}" if why else ""))

    print()
    print("== losses (the same sequences and initial weights must give the same per-step losses, to bf16 rounding)")
    pairs = [("tensor2", "single"), ("tensor2_b8", "data2"), ("fsdp2", "data2")]
    for size in SIZES:
        tag = "2p7b" if size == "2.7b" else size
        for a, b in pairs:
            na, nb = f"{tag}_{a}", f"{tag}_{b}"
            if na not in results or nb not in results:
                continue
            la, lb = results[na]["losses"], results[nb]["losses"]
            k = min(len(la), len(lb))
            try:
                worst = max(abs(x - y) / abs(y) for x, y in zip(la[:k], lb[:k]))
            except (ValueError, ZeroDivisionError):
                continue
            print(f"{na} vs {nb}: {k} steps, max rel diff {worst:.2e} ({'ok' if worst < TOLERANCE else 'FAIL'}: "
                  f"tolerance {TOLERANCE})")
    for s, label, r in trows:
        if "loss" in r:
            first = f"first {r['loss_first']:.4f}, " if isinstance(r.get("loss_first"), (int, float)) else ""
            print(f"{label} {s}: loss {first}last {r['loss']:.4f} (random tokens: about ln(vocab) = 9.21 at the start)"
                  + (f"; config {json.dumps(r['config'])}" if r.get("config") else "")
                  + (f"; AdamW {r['opt_impl']}" if r.get("opt_impl") else "")
                  + (f"; q weight shard {r['local_q_weight']}" if r.get("local_q_weight") else "")
                  + (f"; logits {r['logits_dtype']}" if r.get("logits_dtype") else ""))
    for note in notes:
        print(note[:300])

    for n, groups in sorted(traces.items(), key=lambda kv: order(kv[0])):
        print()
        print(f"== collectives of one step: {n}, rank 0 (ddprun --trace; milliseconds of each span on its stream)")
        print(f"{'collective':52s} {'stream':8s} {'count':>6s} {'ms':>9s} {'MB':>9s}")
        for (g, s), (ms, cnt, by) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
            print(f"{g[:52]:52s} {s:8s} {cnt:6d} {ms:9.3f} {by / 1e6:9.1f}")
        for s in ("compute", "comm"):
            tot = [v for (g, st), v in groups.items() if st == s]
            if tot:
                print(f"{'all on the ' + s + ' stream':52s} {s:8s} {sum(v[1] for v in tot):6d} "
                      f"{sum(v[0] for v in tot):9.3f} {sum(v[2] for v in tot) / 1e6:9.1f}")
        if n in results:
            print(f"(the timed steps of ours_{n}: median {results[n]['ms']:.2f} ms/step, comm_ms {results[n]['comm']:.2f}, "
                  f"exposed {results[n]['exposed']:.2f})")

    print()
    print("ours: median step of the timed steps (warmup excluded); exposed = the metrics' exposed_comm_ms (gradient")
    print("  collectives after the backward + those after the optimizer begins + the tensor-parallel ones);")
    print("  TP comm = the metrics' tp_comm_ms: the tensor-parallel collectives, on the compute stream (all exposed);")
    print("  peak = the runtime's per-rank peak (rank_peak_mem_GiB); pred ms = ddpc's compile-time prediction")
    print("  (the run line's predicted.step_ms, ddpc explain);")
    print("torch: median of CUDA-event step times; peak = max_memory_allocated (max_memory_reserved) per rank;")
    print("x torch TP = tokens/s over PyTorch DTensor TP's at the same size (tensor=2 trains 4 sequences per step on")
    print("  the two GPUs together, data=2 and FSDP 8: tokens/s counts what the whole group trains)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary_tensor.py LOGS")
    main(sys.argv[1])
