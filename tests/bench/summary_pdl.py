#!/usr/bin/env python3
"""tests/bench/summary_pdl.py LOGS N: the table of device_pdl.sh. The leaderboard rounds it ran (LOGS/lb_off_r.log,
lb_on_r.log: ddpbench_kernels --fused without and with --pdl; lb_sdpa_r.log: SDPA), then the XL step of each
variant it ran (xl_V_r.jsonl for V in before, off, on, serial_off, serial_on and r = 1..N; metrics_run.py):
the medians of the step, forward, backward and optimizer tail, and the last loss."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics_run  # noqa: E402
from attn_log import leaderboard, torch_record  # noqa: E402


def main(logs, n):
    print("leaderboard d 64, fused backward (ms): fwd prep fused store | fwd+bwd | / SDPA")
    for r in range(1, 4):
        t = torch_record(f"{logs}/lb_sdpa_{r}.log", "sdpa_shape")
        if not t:
            continue
        for v in ("off", "on"):
            x = leaderboard(f"{logs}/lb_{v}_{r}.log", 64)
            print(f"round {r} PDL {v:3s}: {x['fwd']:.3f} {x['prep']:.3f} {x['a']:.3f} {x['b']:.3f} | {x['fwdbwd']:.3f} |"
                  f" {x['fwdbwd'] / t['fwd_bwd_ms']:.3f}  (SDPA {t['fwd_bwd_ms']:.3f})")
    print("XL step (ms, medians of the timed steps): step fwd bwd tail | last loss")
    for v in ("before", "off", "on", "serial_off", "serial_on"):
        for r in range(1, n + 1):
            path = f"{logs}/xl_{v}_{r}.jsonl"
            if not os.path.exists(path):
                if v in ("off", "on"):
                    print(f"PDL {v} round {r}: no metrics")
                continue
            m = metrics_run.ours(path)
            print(f"PDL {v:10s} round {r}: {m['ms']:.2f} {m['fwd']:.2f} {m['bwd']:.2f} {m['tail']:.2f} | {m['losses'][-1]:.6f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
