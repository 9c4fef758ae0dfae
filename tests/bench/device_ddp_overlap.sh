#!/usr/bin/env bash
# tests/bench/device_ddp_overlap.sh: NPROC GPUs (default 2, nvidia-h200-x2; 4 on nvidia-h200-x4), one call,
# after tests/bench/prepare_device.sh here (carry dev/). CHECK=1 first checks the tiny model on the GPUs (DDP
# with the update in the backward, also low + update_tail, with the all-to-all and with the updates reading
# every rank's gradient, nccl.all_reduce = "peer", against flat DDP and the reference executor). Bucketed DDP with each bucket's AdamW in the
# backward on the update stream (optimizer_overlap) against the same plans without it: ddp_table.sh's RUNS
# (default below), ROUNDS rounds (default 2), PyTorch DDP in the same call (TORCH=0 skips it); then with
# BUSBW=1 (the default) the all-reduce busbw table, ours (`ddprun --bench allreduce`) and PyTorch's
# (`torch_ddp_anchor.py --skip-ddp`); then tests/e2e/gpu_ddp.sh on NPROC ranks (DDP_GPU_RANKS) in the time
# left (BUDGET seconds for the whole script, default 570). Files in $OUT: the table, the logs' tarballs.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
N=${NPROC:-2}
if [ "${CHECK:-0}" = 1 ]; then # the tiny model: DDP with the update in the backward, low + tail, against flat DDP
  . tests/e2e/lib.sh
  e2e_tmp ddp_overlap
  cp schedules/lib/models.lua "$tmp/"
  tiny='models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 })'
  tdata='{ global_batch = 8, tokens = "random", seed = 5 }'
  adam='adamw { lr = 1e-2, weight_decay = 0.1 }'; ov=', sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true'
  write tiny_adam "$tiny" $N ', sync = "flat"' "$adam" 4 "$tdata"
  write tiny_ov "$tiny" $N "$ov" "$adam" 4 "$tdata" && same tiny_ov tiny_adam 1e-6 1e-7
  write tiny_ov_tail "$tiny" $N "$ov" "$adam" 4 "$tdata, streams = { update_priority = \"low\", update_tail = 0.25 }" &&
    same tiny_ov_tail tiny_ov 0 0
  write tiny_ov_a2a_tail "$tiny" $N "$ov" "$adam" 4 \
    "$tdata, streams = { update_priority = \"low\", update_tail = 0.25 }, nccl = { register = \"window\", cta_policy = \"zero\", all_reduce = \"alltoall\" }" &&
    same tiny_ov_a2a_tail tiny_adam 1e-6 1e-7
  # no collective: the updates read every rank's gradient (nccl.all_reduce = "peer"); bitwise the all-reduce
  # plan's on 2 ranks, the tail too; the same plan's losses on the reference executor within 1e-5
  write tiny_peer "$tiny" $N "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer\" }" && same tiny_peer tiny_adam 1e-6 1e-7 &&
    same tiny_peer tiny_ov 0 0
  write tiny_peer_tail "$tiny" $N "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer\" }, streams = { update_tail = 0.25 }" &&
    same tiny_peer_tail tiny_peer 0 0
  $DDPRUN "$tmp/tiny_peer.bin" --nproc $N >"$tmp/tiny_peer.out" 2>&1 && $DDPRUN "$tmp/tiny_peer.bin" --device ref >"$tmp/tiny_peer_ref.out" 2>&1 &&
    losses tiny_peer tiny_peer_ref 1e-5
  write tiny_pcopy "$tiny" $N "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer_copy\" }" && same tiny_pcopy tiny_peer 0 0
  write tiny_pcopy_tail "$tiny" $N "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"peer_copy\" }, streams = { update_tail = 0.25 }" &&
    same tiny_pcopy_tail tiny_peer 0 0
  # bf16 (precision and gradients): the kernel reads bf16 gradients; GPU against the reference executor
  sed -e 's/precision = "fp32"/precision = "bf16"/' -e 's/optimizer_overlap = true/optimizer_overlap = true, grad_dtype = "bf16"/' \
    "$tmp/tiny_peer.lua" >"$tmp/tiny_peer_bf16.lua"
  $DDPC "$tmp/tiny_peer_bf16.lua" -o "$tmp/tiny_peer_bf16.bin" -q &&
    $DDPRUN "$tmp/tiny_peer_bf16.bin" --nproc $N >"$tmp/tiny_peer_bf16.out" 2>&1 &&
    $DDPRUN "$tmp/tiny_peer_bf16.bin" --device ref >"$tmp/tiny_peer_bf16_ref.out" 2>&1 &&
    losses tiny_peer_bf16 tiny_peer_bf16_ref 1e-2 || echo "FAIL: tiny_peer_bf16"
  $DDPC "$tmp/tiny_peer_bf16.lua" -o "$tmp/tiny_pcopy_bf16.bin" -q --set nccl.all_reduce=peer_copy &&
    $DDPRUN "$tmp/tiny_pcopy_bf16.bin" --nproc $N --checkpoint-dir "$tmp/tiny_pcopy_bf16.ckpt" --quiet &&
    $DDPRUN "$tmp/tiny_peer_bf16.bin" --nproc $N --checkpoint-dir "$tmp/tiny_peer_bf16.ckpt" --quiet &&
    same tiny_pcopy_bf16 tiny_peer_bf16 0 0 || echo "FAIL: tiny_pcopy_bf16"
  $DDPRUN "$tmp/tiny_pcopy.bin" --nproc $N --steps 2 | grep -E "point-to-point"
  $DDPRUN "$tmp/tiny_peer.bin" --nproc $N --steps 2 | grep -E "point-to-point|final"
fi
echo "== table, $N ranks ($(date +%T))"
NPROC=$N RUNS=${RUNS:-"ddp_fp32 ddp_fp32_ov ddp100_fp32_ov ddp100_fp32_ov_a2a_winz ddp_fp32_ov_a2a_winz ddp100_bf16_ov ddp100_bf16_ov_a2a_winz"} \
  ROUNDS=${ROUNDS:-2} TORCH=${TORCH:-1} bash tests/bench/ddp_table.sh 2>&1 | tail -14
if [ "${BUSBW:-1}" = 1 ]; then
  echo "== all-reduce busbw, $N ranks ($(date +%T))"
  timeout 90 $DDPRUN --bench allreduce --nproc $N --out $L/ar_ddpc.jsonl >$L/ar_ddpc.log 2>&1; echo "ddprun --bench allreduce rc=$?"
  tail -8 $L/ar_ddpc.log
  timeout 120 torchrun --nproc_per_node=$N $A --skip-ddp >$L/ar_torch.log 2>&1; echo "torch all-reduce rc=$?"
  grep ANCHOR $L/ar_torch.log | grep -i allreduce | cut -c1-160
fi
left=$(( ${BUDGET:-570} - SECONDS ))
echo "== gpu_ddp on $N ranks, ${left} s left ($(date +%T))"
if [ $left -gt 30 ]; then
  DDP_GPU_RANKS=$N timeout $left bash tests/e2e/gpu_ddp.sh >$L/gpu_ddp.log 2>&1; echo "gpu_ddp rc=$?"
  echo "ok: $(grep -cE '^ok' $L/gpu_ddp.log)"; grep -E "^FAIL|optoverlap|ar_a2a" $L/gpu_ddp.log | cut -c1-220
fi
tar czf $OUT/logs.tgz -C $L --exclude ddp_table . ; echo "== done ($(date +%T))"
