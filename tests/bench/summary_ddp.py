# tests/bench/summary_ddp.py OUT: the table of the 2-GPU run (ours and PyTorch) from the files under OUT.
import json, glob, os, statistics, sys
out = sys.argv[1]
print(f"{'plan':28s} {'step ms':>8s} {'comm':>7s} {'exposed':>8s} {'overlap':>8s} {'opt':>6s} {'GiB':>6s}")
for p in sorted(glob.glob(f"{out}/ddp_*.jsonl")):
    rows = [json.loads(l) for l in open(p) if '"step"' in l]
    t = [r for r in rows if not r["warmup"]] or rows
    if not t: continue
    g = lambda k: statistics.mean(r[k] for r in t)
    print(f"{os.path.basename(p)[4:-6]:28s} {g('step_ms'):8.2f} {g('comm_ms'):7.2f} {g('exposed_comm_ms'):8.2f} {g('overlap_ratio'):8.3f} {g('optimizer_ms'):6.2f} {t[-1]['peak_mem_GiB']:6.1f}")
for l in (open(f"{out}/torch_ddp.log") if os.path.exists(f"{out}/torch_ddp.log") else []):
    if l.startswith("ANCHOR"):
        d = json.loads(l[7:])
        if d["kind"] == "ddp": print(f"torch {d['variant']:22s} {d['iter_ms']:8.2f}")
        if d["kind"] == "allreduce": print(f"torch allreduce {d['mb']:5d} MB busbw {d['busbw_GBs']:.1f} GB/s")
