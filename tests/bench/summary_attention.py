#!/usr/bin/env python3
"""tests/bench/summary_attention.py OUT: the table of tests/bench/device_attention.sh. Per bf16/f32, head dim and
sequence (batch 1, 16 heads, causal): our forward and forward+backward with the default kernels (wgmma where
launch.c picks it) and with mma.sync everywhere, PyTorch SDPA's forward and forward+backward from the same
call, and the ratios of the defaults to SDPA; then the leaderboard line of each run and the XL step with
either choice (medians of the 15 steps after 5 warm-up, two rounds)."""
import json
import os
import statistics
import sys


def records(path, key):
    if not os.path.exists(path):
        return []
    text = open(path).read().strip()
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else data.get("results", [])
    except json.JSONDecodeError:
        return [json.loads(l) for l in text.splitlines() if l.strip().startswith("{") and key in l]


def main(out, other="mma.sync"):
    ours = {}
    for impl in ("wgmma", "mma"):
        for r in records(f"{out}/attn_{impl}.json", "attention"):
            if r.get("bench") == "attention":
                ours[(impl, r["dtype"], r["d"], r["T"])] = r
            if r.get("bench") == "leaderboard_attention":
                ours[(impl, "leaderboard")] = r
    torch = {}
    p = f"{out}/torch_sdpa.log"
    if os.path.exists(p):
        for l in open(p):
            if l.startswith("TORCH "):
                r = json.loads(l[6:])
                if r.get("kind") == "attention" and "fwd_ms" in r:
                    torch[(r["dtype"].replace("fp32", "f32"), r["d"], r["T"])] = r
    print(f"{'dtype':5s} {'d':>4s} {'T':>6s} | {'fwd':>9s} {'fwd ' + other[:4]:>8s} {'TFLOP/s':>7s} | {'fwd+bwd':>8s} {'f+b ' + other[:4]:>8s} |"
          f" {'SDPA fwd':>8s} {'SDPA f+b':>8s} | {'fwd/SDPA':>8s} {'f+b/SDPA':>8s}")
    for dt in ("bf16", "f32"):
        for d in (64, 128):
            for t in (1024, 4096, 16384):
                w, m, s = ours.get(("wgmma", dt, d, t)), ours.get(("mma", dt, d, t)), torch.get((dt, d, t))
                if not w:
                    continue
                fl = 4.0 * 16 * t * t * d / 2
                tf = fl / (w["flash_fwd_ms"] * 1e-3) / 1e12 if w["flash_fwd_ms"] > 0 else 0
                sf, sb = (s["fwd_ms"], s["fwd_bwd_ms"]) if s else (float("nan"), float("nan"))
                print(f"{dt:5s} {d:4d} {t:6d} | {w['flash_fwd_ms']:9.3f} {m['flash_fwd_ms'] if m else float('nan'):8.3f}"
                      f" {tf:7.1f} | {w['flash_fwdbwd_ms']:8.3f} {m['flash_fwdbwd_ms'] if m else float('nan'):8.3f} | {sf:8.3f} {sb:8.3f} |"
                      f" {w['flash_fwd_ms'] / sf:8.2f} {w['flash_fwdbwd_ms'] / sb:8.2f}")
    for impl in ("wgmma", "mma"):
        r = ours.get((impl, "leaderboard"))
        if r:
            print(f"leaderboard ({'defaults' if impl == 'wgmma' else other}): fwd+bwd {r['fwdbwd_ms']:.3f} ms = fwd {r['fwd_ms']:.3f} + bwd {r['bwd_ms']:.3f}")
    s = torch.get(("bf16", 64, 16384))
    if s:
        print(f"leaderboard PyTorch SDPA: fwd+bwd {s['fwd_bwd_ms']:.3f} ms, fwd {s['fwd_ms']:.3f}")
    seeds = {}
    for impl in ("wgmma", "mma"):
        for r in records(f"{out}/seeds_{impl}.json", "seeds"):
            if r.get("bench") == "seeds_attention":
                seeds[(impl, r["dtype"], r["d"], r["T"])] = r
    p = f"{out}/torch_seeds.log"
    if os.path.exists(p):
        for l in open(p):
            if l.startswith("TORCH "):
                r = json.loads(l[6:])
                if r.get("kind") == "seeds_attention":
                    seeds[("torch", r["dtype"].replace("fp32", "f32"), r["d"], r["T"])] = r
    if seeds:
        print(f"seeds' grid, batch 8 x 1 head, no mask (ms): {'dtype':5s} {'d':>4s} {'T':>6s} | {'fwd':>8s} {'fwd ' + other[:4]:>8s} |"
              f" {'f+b':>8s} {'f+b ' + other[:4]:>8s} {'TFLOP/s':>7s} | {'SDPA fwd':>8s} {'SDPA f+b':>8s} | {'f+b/SDPA':>8s}")
        nan = float("nan")
        for dt in ("bf16", "f32"):
            for d in (16, 32, 64, 128):
                for t in (256, 1024, 4096, 8192, 16384):
                    w, m, tr = seeds.get(("wgmma", dt, d, t)), seeds.get(("mma", dt, d, t)), seeds.get(("torch", dt, d, t))
                    if not w:
                        continue
                    tf = 4.0 * 8 * t * t * d * 3.5 / (w["fwdbwd_ms"] * 1e-3) / 1e12 if w["fwdbwd_ms"] > 0 else 0
                    sf = tr.get("fwd_ms", nan) if tr else nan
                    sb = tr.get("fwd_bwd_ms", nan) if tr else nan
                    print(f"{'':45s}{dt:5s} {d:4d} {t:6d} | {w['fwd_ms']:8.3f} {m['fwd_ms'] if m else nan:8.3f} |"
                          f" {w['fwdbwd_ms']:8.3f} {m['fwdbwd_ms'] if m else nan:8.3f} {tf:7.1f} | {sf:8.3f} {sb:8.3f} |"
                          f" {w['fwdbwd_ms'] / sb if sb == sb else nan:8.2f}")
    tc = None
    p = f"{out}/torch_compile.log"
    if os.path.exists(p):
        for l in open(p):
            if l.startswith("ANCHOR") and '"variant": "local"' in l:
                tc = json.loads(l[7:])["iter_ms"]
    print(f"torch.compile XL ms/step (same call): {tc}")
    print(f"{'XL bf16 step':30s} {'ms/step':>8s} {'fwd':>7s} {'bwd':>7s} {'loss@20':>9s}")
    for rnd in (1, 2):
        for v in ("wgmma", "mma"):
            f = f"{out}/xl_{v}_{rnd}.jsonl"
            if not os.path.exists(f):
                continue
            rows = [json.loads(l) for l in open(f) if '"step"' in l]
            t = [r for r in rows if not r.get("warmup")]
            if not t:
                continue
            g = lambda k: statistics.median(r[k] for r in t)
            name = {"wgmma": "defaults", "mma": other}[v] + ", round " + str(rnd)
            ratio = f" {g('step_ms') / tc:6.3f} of torch.compile" if tc else ""
            print(f"{name:30s} {g('step_ms'):8.2f} {g('forward_ms'):7.2f} {g('backward_ms'):7.2f} {rows[-1]['loss']:9.5f}{ratio}")


if __name__ == "__main__":
    # argv[2]: what the second kernel set ("mma" files) is, for the labels (default mma.sync)
    main(sys.argv[1], *(sys.argv[2:3]))
