#!/usr/bin/env python3
"""tests/bench/summary_leaderboard.py LOGS N: the table of device_attention_gputime.sh's LB_ROUNDS part. Per head
dim (64, 128) and round r = 1..N: our forward + backward with the fused backward (LOGS/lb_fused_r.log) and
the split one (lb_split_r.log), SDPA's (lb_sdpaD_r.log, torch_extra.py --sdpa-shape), the ratios, and the
forwards; then the medians over the rounds. Where the logs of ours timed with --gpu-time are there too
(lb_fusedgt_r.log, lb_splitgt_r.log: device_attention_gputime.sh's LB_GPU_TIME=N), the same for those; where
another revision's kernels ran (lb_old_r.log, lb_oldgt_r.log), their fused backward beside ours; where ours ran
under --pdl too (lb_fusedpdl_r.log, LB_PDL=1), the fused backward with it against without."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attn_log import NAN, leaderboard, torch_record  # noqa: E402


def pair_rows(logs, n, old, mine, label, names=("this revision", "the other")):
    for d in (64, 128):
        ratios = []
        for r in range(1, n + 1):
            o = leaderboard(f"{logs}/lb_{old}_{r}.log", d)
            m = leaderboard(f"{logs}/lb_{mine}_{r}.log", d)
            t = torch_record(f"{logs}/lb_sdpa{d}_{r}.log", "sdpa_shape") or {"fwd_bwd_ms": NAN}
            ratios.append(m["fwdbwd"] / o["fwdbwd"])
            print(f"d {d:3d} round {r}: fused backward{label}: {names[0]} {m['fwdbwd']:.3f}, {names[1]} {o['fwdbwd']:.3f}"
                  f" ({m['fwdbwd'] / o['fwdbwd']:.3f}x) | x SDPA {m['fwdbwd'] / t['fwd_bwd_ms']:.3f} against "
                  f"{o['fwdbwd'] / t['fwd_bwd_ms']:.3f}")
        print(f"d {d:3d} median: {names[0]} / {names[1]} {statistics.median(ratios):.3f}")


def table(logs, n, fused, split, label):
    for d in (64, 128):
        rows = []
        for r in range(1, n + 1):
            f = leaderboard(f"{logs}/lb_{fused}_{r}.log", d)
            s = leaderboard(f"{logs}/lb_{split}_{r}.log", d)
            t = torch_record(f"{logs}/lb_sdpa{d}_{r}.log", "sdpa_shape") or {"fwd_ms": NAN, "fwd_bwd_ms": NAN}
            rows.append((f["fwdbwd"], s["fwdbwd"], t["fwd_bwd_ms"]))
            print(f"d {d:3d} round {r}: ours{label} fused {f['fwdbwd']:.3f} split {s['fwdbwd']:.3f} | SDPA "
                  f"{t['fwd_bwd_ms']:.3f} | x SDPA fused {f['fwdbwd'] / t['fwd_bwd_ms']:.3f} split "
                  f"{s['fwdbwd'] / t['fwd_bwd_ms']:.3f} | forward ours {f['fwd']:.3f} SDPA {t['fwd_ms']:.3f} "
                  f"({f['fwd'] / t['fwd_ms']:.3f})")
        med = lambda i: statistics.median(x[i] for x in rows)
        ratio = lambda i: statistics.median(x[i] / x[2] for x in rows)
        print(f"d {d:3d} median: ours{label} fused {med(0):.3f} split {med(1):.3f} SDPA {med(2):.3f}: x SDPA fused "
              f"{ratio(0):.3f}, split {ratio(1):.3f}")


def main(logs, n):
    print("leaderboard (B 1, H 16, T 16384, causal, bf16) by GPU time, alternating rounds: forward + backward ms")
    table(logs, n, "fused", "split", "")
    if os.path.exists(f"{logs}/lb_fusedgt_1.log"):
        print("... ours as SDPA: runs back to back behind a GPU spin, three rounds (ddpbench_kernels --gpu-time N):")
        table(logs, n, "fusedgt", "splitgt", " (--gpu-time)")
    if os.path.exists(f"{logs}/lb_fusedpdl_1.log"):
        print("... ours under --pdl (programmatic dependent launch) against without, both --gpu-time:")
        pair_rows(logs, n, "fusedgt", "fusedpdl", " (--gpu-time)", ("with PDL", "without"))
    if os.path.exists(f"{logs}/lb_old_1.log"):
        print("... against another revision's kernels (dev/old):")
        pair_rows(logs, n, "old", "fused", "")
        if os.path.exists(f"{logs}/lb_oldgt_1.log"):
            pair_rows(logs, n, "oldgt", "fusedgt", " (--gpu-time)")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
