"""tests/bench/attn_log.py: the attention benchmarks' log lines read for the summaries (summary_leaderboard.py,
summary_pdl.py, device_ab.sh's table): torch_record(path, kind), the last `TORCH {...}` record of torch_extra.py
with that kind ("sdpa_shape", "xl_energy", ...) or None; leaderboard(path, d), ddpbench_kernels --only
leaderboard's line for head dim d as {fwd, prep, a, b, fwdbwd} in ms (a, b: dkv and dq, or with --fused the
fused kernel and the store), NaN for every field where the file or the line is missing."""
import json
import re

NAN = float("nan")


def torch_record(path, kind):
    rec = None
    try:
        for line in open(path):
            if line.startswith("TORCH ") and f'"kind": "{kind}"' in line:
                rec = json.loads(line[6:])
    except OSError:
        pass
    return rec


LEADERBOARD = re.compile(r"leaderboard d (\d+)[^:]*: fwd ([0-9.]+) ms, prep ([0-9.]+), \w+ ([0-9.]+), \w+ ([0-9.]+), "
                         r"fwd\+bwd ([0-9.]+)")


def leaderboard(path, d):
    try:
        for line in open(path):
            m = LEADERBOARD.match(line)
            if m and int(m.group(1)) == d:
                return dict(zip(("fwd", "prep", "a", "b", "fwdbwd"), (float(x) for x in m.groups()[1:])))
    except OSError:
        pass
    return dict.fromkeys(("fwd", "prep", "a", "b", "fwdbwd"), NAN)
