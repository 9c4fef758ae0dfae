#!/usr/bin/env python3
"""tests/bench/summary_gemm.py OUT: the XL step's 15 GEMM shapes, ours against the dense bf16 ceiling and
against PyTorch's `a @ b`, all from one device call (tests/bench/device_gemm.sh):
  OUT/xl_trace.txt     trace_summary.py of a traced XL step (ours: cuBLASLt with the tuned algorithm, the
                       shape's epilogue and output dtype, timed by the event pair around each instruction)
  OUT/torch_gemm.log   torch_extra.py --gemm (bf16 in and out, the same M x N x K and transposes)
  OUT/torch_kernels.log  torch_ddp_anchor.py --kernels (the 8192^3 bf16 GEMM: the measured ceiling)"""
import json
import re
import sys


def main(out):
    ceil = None
    for l in open(f"{out}/torch_kernels.log"):
        if l.startswith("ANCHOR") and "gemm_bf16_8192" in l:
            ceil = json.loads(l[7:])["TFLOPs"]
    # keyed by name (output_proj and output_proj.dx share M x N x K): the plan's "attn.output_proj.dx" is
    # PyTorch's "output_proj.dx"
    torch = {}
    for l in open(f"{out}/torch_gemm.log"):
        if l.startswith("TORCH ") and '"gemm"' in l:
            r = json.loads(l[6:])
            torch[r["name"]] = r
    ours = {}
    pat = re.compile(r"^gemm (\S+) \[(\d+) x (\d+) x (\d+)\]\s+([\d.]+)\s+(\d+)\s+[\d.]+%\s+([\d.]+)")
    for l in open(f"{out}/xl_trace.txt"):
        m = pat.match(l.strip())
        if m:
            name, M, N, K, ms, count, tf = m.groups()
            ours[name.removeprefix("attn.")] = ((int(M), int(N), int(K)), float(ms) / int(count), float(tf))
    print(f"dense bf16 ceiling (PyTorch 8192^3, same call): {ceil:.1f} TFLOP/s" if ceil else "ceiling: not measured")
    print(f"{'GEMM':18s} {'M x N x K':>20s} | {'ours ms':>8s} {'TFLOP/s':>8s} {'of ceil':>7s} | {'PyTorch':>8s} {'ours/PT':>7s}")
    for name, t in sorted(torch.items()):
        M, N, K = t["M"], t["N"], t["K"]
        o = ours.get(name)
        if not o or o[0] != (M, N, K):
            print(f"{t['name']:18s} {M:6d} x {N:5d} x {K:5d} | {'(not in the trace)':>26s} | {t['TFLOPs']:8.1f}")
            continue
        frac = o[2] / ceil if ceil else float("nan")
        print(f"{t['name']:18s} {M:6d} x {N:5d} x {K:5d} | {o[1]:8.4f} {o[2]:8.1f} {frac:7.2f} | {t['TFLOPs']:8.1f} {o[2] / t['TFLOPs']:7.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
