#!/usr/bin/env bash
# s25 call 2 (4 x H200): the 4-GPU table with "peer_copy" pulling from rank me + 1, me + 2, .. in turn
# (9a7a14d), beside the all-to-all plans, ZeRO-1 and PyTorch DDP (ddp_table.sh, two rounds of 30 steps);
# then the same peer_copy plan under bd3a51c's ddprun (every rank pulling in rank order) and this tree's,
# alternating; then the tiny model on 4 ranks: "peer_copy" bitwise equal to "peer", "peer" against AdamW
# DDP (allclose 1e-4 / 1e-5, eps 1e-5 as gpu_ddp.sh on more than 2 ranks), "peer_copy"'s losses against
# the reference executor. After prepare_device.sh, prepare_ab.sh a_base bd3a51c ..., and
# `COMPILE_ONLY=1 NPROC=4 RUNS=... ddp_table.sh` here (warm dev/cache).
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
nvidia-smi topo -m | head -8
RUNS="ddp100_fp32_ov_pcopy_low ddp100_fp32_ov_a2a_winz_low ddp100_bf16_ov_a2a_winz_low zero1_overlap_a2a_winz zero1_overlap_bf16_a2a_winz"
NPROC=4 STEPS=30 SINGLE_STEPS=30 ROUNDS=2 TORCH=1 RUNS="$RUNS" timeout 400 bash tests/bench/ddp_table.sh
echo "== peer_copy: bd3a51c's ddprun against this tree's $(date +%T), $(left) s left"
pc=$P/t_ddp100_fp32_ov_pcopy_low.bin
for r in 1 2; do
  [ "$(left)" -lt 90 ] && { echo "skipped round $r"; continue; }
  timeout 60 dev/ab/a_base/ddprun $pc --nproc 4 --steps 30 --metrics $L/pcopy_old.r$r.jsonl --quiet >$L/pcopy_old.r$r.log 2>&1 || echo "old r$r: $(tail -1 $L/pcopy_old.r$r.log)"
  timeout 60 $DDPRUN $pc --nproc 4 --steps 30 --metrics $L/pcopy_new.r$r.jsonl --quiet >$L/pcopy_new.r$r.log 2>&1 || echo "new r$r: $(tail -1 $L/pcopy_new.r$r.log)"
done
python3 - $L <<'PY'
import json, glob, statistics, sys
for f in sorted(glob.glob(sys.argv[1] + "/pcopy_*.jsonl")):
    rows = [json.loads(l) for l in open(f) if '"step"' in l and '"warmup"' not in l]
    rows = [r for r in rows if not r.get("warmup")]
    if rows:
        med = lambda k: statistics.median(r.get(k, float("nan")) for r in rows)
        print(f"{f.split('/')[-1]:24s} step {med('step_ms'):8.2f} ms  comm {med('comm_ms'):7.2f}  exposed {med('exposed_comm_ms'):6.2f}  last loss {rows[-1]['loss']}")
PY
echo "== tiny model on 4 ranks $(date +%T), $(left) s left"
if [ "$(left)" -gt 60 ]; then
(
  . tests/e2e/lib.sh
  e2e_tmp pcopy4
  cp schedules/lib/models.lua "$tmp/"
  tiny='models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 })'
  tdata='{ global_batch = 8, tokens = "random", seed = 5 }'
  adam='adamw { lr = 1e-2, weight_decay = 0.1, eps = 1e-5 }'
  ov=', sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true'
  write tiny_adam "$tiny" 4 ', sync = "flat"' "$adam" 4 "$tdata"
  write tiny_ar_peer "$tiny" 4 "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer\" }" && same tiny_ar_peer tiny_adam 1e-4 1e-5
  write tiny_ar_pcopy "$tiny" 4 "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer_copy\" }" && same tiny_ar_pcopy tiny_ar_peer 0 0
  if "$DDPRUN" "$tmp/tiny_ar_pcopy.bin" --nproc 4 >"$tmp/tiny_ar_pcopy.out" 2>&1 &&
    "$DDPRUN" "$tmp/tiny_ar_pcopy.bin" --device ref >"$tmp/tiny_ar_pcopy_ref.out" 2>&1; then
    losses tiny_ar_pcopy tiny_ar_pcopy_ref 1e-5
  else fail "tiny_ar_pcopy on the GPUs and the reference executor: $(tail -1 "$tmp/tiny_ar_pcopy_ref.out")"; fi
  echo "tiny checks: fail=$fail"
) 2>&1 | tee $L/tiny4.log
fi
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
