#!/usr/bin/env python3
"""tests/bench/summary_dq_epilogue.py LOGS N "MACRO=V ...": the table of device_dq_epilogue.sh. Per head dim (64,
128) and round r = 1..N, forward + backward in ms by GPU time: ours with the fused backward writing dQ
(LOGS/lb_fused_r.log), the code before it (lb_old_r.log: prep + fused + ATTN_DQ_STORE, where it ran), each
template variant v = 1.. (lb_vv_r.log, named by its macro setting) and SDPA (lb_sdpaD_r.log), with the ratios
to SDPA; then the backward's parts (prep, fused kernel, store) and the medians over the rounds."""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attn_log import NAN, leaderboard, torch_record  # noqa: E402


def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else NAN


def main(logs, n, variants):
    print("leaderboard (B 1, H 16, T 16384, causal, bf16) by GPU time, alternating rounds: forward + backward ms")
    sides = [("new", "fused"), ("old", "old")] + [(x, f"v{i}") for i, x in enumerate(variants, 1)]
    for d in (64, 128):
        got = {name: [] for name, _ in sides}
        sdpa = []
        for r in range(1, n + 1):
            t = torch_record(f"{logs}/lb_sdpa{d}_{r}.log", "sdpa_shape") or {"fwd_ms": NAN, "fwd_bwd_ms": NAN}
            sdpa.append(t["fwd_bwd_ms"])
            cells = []
            for name, stem in sides:
                x = leaderboard(f"{logs}/lb_{stem}_{r}.log", d)
                got[name].append(x)
                cells.append(f"{name} {x['fwdbwd']:.3f} ({x['fwdbwd'] / t['fwd_bwd_ms']:.3f}x)")
            print(f"d {d:3d} round {r}: SDPA {t['fwd_bwd_ms']:.3f} | " + " | ".join(cells))
        for name, _ in sides:
            xs = got[name]
            ratios = [x["fwdbwd"] / s for x, s in zip(xs, sdpa)]
            print(f"d {d:3d} median {name}: {med([x['fwdbwd'] for x in xs]):.3f} ms, x SDPA {med(ratios):.3f} "
                  f"(rounds {min(ratios):.3f}-{max(ratios):.3f}); fwd {med([x['fwd'] for x in xs]):.3f}, prep "
                  f"{med([x['prep'] for x in xs]):.3f}, fused {med([x['a'] for x in xs]):.3f}, store "
                  f"{med([x['b'] for x in xs]):.3f}")
        print(f"d {d:3d} median SDPA: {med(sdpa):.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3].split() if len(sys.argv) > 3 else [])
