#!/usr/bin/env bash
# tests/bench/device_fused_bwd.sh: one GPU, one call (after tests/bench/prepare_device.sh here; carry dev/):
# the fused attention backward (ATTN_BWD_FUSED + ATTN_DQ_STORE, and ATTN_BWD_PREP zeroing its accumulator)
# against the reference executor on fresh random inputs, then the leaderboard configuration (batch 1,
# 16 heads, T 16384, causal, bf16, head dims 64 and 128) with the split backward (ATTN_BWD_DKV + ATTN_BWD_DQ)
# and the fused one, alternating, two rounds, and PyTorch SDPA in the same call. Options:
#   XL=1      the XL step with each backward, two rounds
#   MASK=1    the kernels whose masking became a branch (TMA and cp.async forward, dK/dV, dQ) against the
#             reference
#   ROUNDS=N  the fused leaderboard and SDPA alternating N times (the ratio per round and its median)
#   GRID=1    the attention grid and the seeds' grid with each backward, and PyTorch's seeds' grid
#   STEP=1    the whole-step checks (tests/e2e/gpu_step.sh)
# Logs in $OUT/logs.tgz; the table last (also $OUT/table.txt).
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
echo "== kernels against the reference ($(date +%T))"
kern fused ATTN_BWD_FUSED
kern fused_halves ATTN_BWD_FUSED DDP_TUNE_FUSED_SPLIT=1
kern dq_store ATTN_DQ_STORE
kern prep ATTN_BWD_PREP
if [ "${MASK:-0}" = 1 ]; then  # the kernels whose masking became a branch: the TMA forward (forced), dK/dV
  kern fwd_tma ATTN_FWD DDP_TUNE_FWD_WGMMA=4
  kern dkv ATTN_BWD_DKV
  kern dkv_bn128 ATTN_BWD_DKV DDP_TUNE_DKV_BN=128
  kern fwd_cpasync ATTN_FWD DDP_TUNE_FWD_WGMMA=3
  kern dkv_cpasync ATTN_BWD_DKV DDP_TUNE_DKV_WGMMA=3
  kern dq ATTN_BWD_DQ
  kern dq_cpasync ATTN_BWD_DQ DDP_TUNE_DQ_WGMMA=3
fi
echo "== leaderboard ($(date +%T))"
for round in 1 2; do
  timeout 90 dev/bin/ddpbench_kernels --only leaderboard >$OUT/lb_split_$round.log 2>&1 || echo "split rc=$?"
  timeout 90 dev/bin/ddpbench_kernels --only leaderboard --fused >$OUT/lb_fused_$round.log 2>&1 || echo "fused rc=$?"
  DDP_TUNE_FUSED_SPLIT=1 timeout 90 dev/bin/ddpbench_kernels --only leaderboard --fused >$OUT/lb_fusedhalves_$round.log 2>&1 ||
    echo "fused by halves rc=$?"
done
timeout 200 python3 $B/torch_extra.py --attention --quick >$OUT/torch_sdpa.log 2>&1; echo "torch sdpa rc=$?"
if [ "${GRID:-0}" = 1 ]; then  # the attention grid (16 heads, causal) and the seeds' grid, fused and split; SDPA's
  # (named as tests/bench/summary_attention.py reads them: "wgmma" the fused backward, "mma" the split one)
  for v in wgmma mma; do
    f=; [ $v = wgmma ] && f=--fused
    timeout 200 dev/bin/ddpbench_kernels --only attention --quick --naive-max 0 $f --out $OUT/attn_$v.json >$OUT/attn_$v.log 2>&1 ||
      echo "grid $v rc=$?"
    timeout 200 dev/bin/ddpbench_kernels --only seeds $f --out $OUT/seeds_$v.json >$OUT/seeds_$v.log 2>&1 || echo "seeds $v rc=$?"
  done
  timeout 240 python3 $B/torch_extra.py --seeds >$OUT/torch_seeds.log 2>&1; echo "torch seeds rc=$?"
fi
if [ "${XL:-0}" = 1 ]; then
  $DDPC schedules/bench_xl.lua -o $P/split.bin -q
  $DDPC schedules/bench_xl.lua -o $P/fused.bin -q --set fusion.attention_backward=true
  for round in 1 2; do
    for v in split fused; do
      timeout 120 $DDPRUN $P/$v.bin --steps 20 --metrics $OUT/xl_${v}_$round.jsonl --quiet >$OUT/xl_${v}_$round.log 2>&1 ||
        echo "$v failed: $(tail -2 $OUT/xl_${v}_$round.log)"
    done
  done
fi
if [ "${STEP:-0}" = 1 ]; then  # whole steps against the reference, the fused backward's case included
  timeout 240 bash tests/e2e/gpu_step.sh >$OUT/gpu_step.log 2>&1; echo "gpu_step rc=$?"; grep -E "^(ok|FAIL)" $OUT/gpu_step.log
fi
if [ "${ROUNDS:-0}" -gt 0 ]; then  # the fused leaderboard and SDPA alternating, ROUNDS times, for the ratio's spread
  for round in $(seq 1 "$ROUNDS"); do
    timeout 90 dev/bin/ddpbench_kernels --only leaderboard --fused >$OUT/alt_ours_$round.log 2>&1 || echo "ours $round rc=$?"
    timeout 200 python3 $B/torch_extra.py --attention --quick >$OUT/alt_sdpa_$round.log 2>&1 || echo "sdpa $round rc=$?"
  done
fi
echo "== table ($(date +%T))"
{
for f in $OUT/lb_*_1.log $OUT/lb_*_2.log; do echo "$(basename $f .log): $(grep -h "^leaderboard" $f | tr '\n' ' ')"; done
if [ "${XL:-0}" = 1 ]; then
  python3 - $OUT <<'PY'
import json, statistics, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/xl_*.jsonl")):
    rows = [json.loads(l) for l in open(f) if '"step"' in l]
    ms = statistics.median(r["step_ms"] for r in rows[5:]) if len(rows) > 5 else float("nan")
    print(f"{os.path.basename(f)}: {len(rows)} steps, median step {ms:.2f} ms, last loss {rows[-1]['loss'] if rows else 'none'}")
PY
fi
grep -E '"T": 16384' $OUT/torch_sdpa.log | grep bf16
[ "${ROUNDS:-0}" -gt 0 ] && python3 - $OUT "$ROUNDS" <<'PY'
import json, re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
for d in (64, 128):
    rows = []
    for r in range(1, n + 1):
        ours = [l for l in open(f"{out}/alt_ours_{r}.log") if l.startswith(f"leaderboard d {d} ")]
        sdpa = [json.loads(l[6:]) for l in open(f"{out}/alt_sdpa_{r}.log") if l.startswith("TORCH ")]
        sdpa = [x for x in sdpa if x.get("d") == d and x.get("T") == 16384 and x.get("dtype") == "bf16"]
        if ours and sdpa:
            o = float(re.search(r"fwd\+bwd ([0-9.]+)", ours[0]).group(1))
            rows.append((o, sdpa[0]["fwd_bwd_ms"], o / sdpa[0]["fwd_bwd_ms"]))
    if rows:
        print(f"d {d}, {len(rows)} alternating rounds: ours " + " ".join(f"{o:.3f}" for o, _, _ in rows) +
              " | SDPA " + " ".join(f"{t:.3f}" for _, t, _ in rows) + " | ratio " + " ".join(f"{q:.3f}" for _, _, q in rows) +
              f" | median ratio {statistics.median(q for _, _, q in rows):.3f}")
PY
[ "${GRID:-0}" = 1 ] && python3 $B/summary_attention.py $OUT "split backward" | grep -v "^XL bf16\|^torch.compile"
} | tee $OUT/table.txt
(cd $OUT && tar czf /tmp/logs.tgz --exclude=table.txt . && find . -type f ! -name table.txt -delete && mv /tmp/logs.tgz .)
