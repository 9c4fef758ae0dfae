#!/usr/bin/env python3
"""tests/bench/summary_leaderboard.py LOGS N: the table of device_attention_gputime.sh's LB_ROUNDS part. Per head
dim (64, 128) and round r = 1..N: our forward + backward with the fused backward (LOGS/lb_fused_r.log) and
the split one (lb_split_r.log), SDPA's (lb_sdpaD_r.log, torch_extra.py --sdpa-shape), the ratios, and the
forwards; then the medians over the rounds."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attn_log import NAN, leaderboard, torch_record  # noqa: E402


def main(logs, n):
    print("leaderboard (B 1, H 16, T 16384, causal, bf16) by GPU time, alternating rounds: forward + backward ms")
    for d in (64, 128):
        rows = []
        for r in range(1, n + 1):
            f = leaderboard(f"{logs}/lb_fused_{r}.log", d)
            s = leaderboard(f"{logs}/lb_split_{r}.log", d)
            t = torch_record(f"{logs}/lb_sdpa{d}_{r}.log", "sdpa_shape") or {"fwd_ms": NAN, "fwd_bwd_ms": NAN}
            rows.append((f["fwdbwd"], s["fwdbwd"], t["fwd_bwd_ms"]))
            print(f"d {d:3d} round {r}: ours fused {f['fwdbwd']:.3f} split {s['fwdbwd']:.3f} | SDPA {t['fwd_bwd_ms']:.3f} |"
                  f" x SDPA fused {f['fwdbwd'] / t['fwd_bwd_ms']:.3f} split {s['fwdbwd'] / t['fwd_bwd_ms']:.3f}"
                  f" | forward ours {f['fwd']:.3f} SDPA {t['fwd_ms']:.3f} ({f['fwd'] / t['fwd_ms']:.3f})")
        med = lambda i: statistics.median(x[i] for x in rows)
        ratio = lambda i: statistics.median(x[i] / x[2] for x in rows)
        print(f"d {d:3d} median: ours fused {med(0):.3f} split {med(1):.3f} SDPA {med(2):.3f}: x SDPA fused "
              f"{ratio(0):.3f}, split {ratio(1):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
