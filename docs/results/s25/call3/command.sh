#!/usr/bin/env bash
# s25 call 3 (4 x H200): nccl.movement = "peer_copy" (the all-to-alls and all-gathers as each rank's own
# copy-engine pulls through CUDA IPC). First the tiny model on 4 ranks, each moved plan against the same plan
# on NCCL's collectives, bit for bit (ZeRO-1 and ZeRO-3 with the all-to-all reduce-scatter, DDP's all-to-all
# all-reduce with the update in the backward), and the run line; then the 4-GPU table, NCCL's copy-engine
# all-to-all (windows, zero-CTA) against the pulls, two rounds of 30 steps. After prepare_device.sh and
# `COMPILE_ONLY=1 NPROC=4 RUNS=... ddp_table.sh` here.
set -u
. tests/bench/device_env.sh
exec > >(tee $OUT/run.log) 2>&1
T0=$(date +%s); left() { echo $((570 - ($(date +%s) - T0))); }
echo "== tiny model on 4 ranks $(date +%T)"
(
  . tests/e2e/lib.sh
  e2e_tmp mv4
  cp schedules/lib/models.lua "$tmp/"
  tiny='models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 })'
  tdata='{ global_batch = 8, tokens = "random", seed = 5 }'
  adam='adamw { lr = 1e-2, weight_decay = 0.1, eps = 1e-5 }'
  for lv in zero1 zero3; do
    z=", sync = \"bucketed\", bucket_mb = 0.05, shard = \"$lv\", optimizer_overlap = true"
    write tiny_${lv}_a2a "$tiny" 4 "$z" "$adam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\" }"
    write tiny_${lv}_a2a_mv "$tiny" 4 "$z" "$adam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\", movement = \"peer_copy\" }" &&
      same tiny_${lv}_a2a_mv tiny_${lv}_a2a 0 0
  done
  ov=', sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true'
  write tiny_ar_a2a "$tiny" 4 "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"alltoall\" }"
  write tiny_ar_a2a_mv "$tiny" 4 "$ov" "$adam" 4 "$tdata, nccl = { all_reduce = \"alltoall\", movement = \"peer_copy\" }" &&
    same tiny_ar_a2a_mv tiny_ar_a2a 0 0
  "$DDPRUN" "$tmp/tiny_ar_a2a_mv.bin" --nproc 4 --steps 1 --metrics "$tmp/mv.jsonl" --quiet &&
    python3 -c 'import json,sys; print("run line p2p:", json.loads(open(sys.argv[1]).readline()).get("p2p"))' "$tmp/mv.jsonl"
  echo "tiny checks: fail=$fail"
) 2>&1 | tee $L/tiny4.log
echo "== table $(date +%T), $(left) s left"
RUNS="ddp100_fp32_ov_a2a_winz_low ddp100_fp32_ov_a2a_mv_low ddp100_bf16_ov_a2a_winz_low ddp100_bf16_ov_a2a_mv_low zero1_overlap_a2a_winz zero1_overlap_a2a_mv"
NPROC=4 STEPS=30 SINGLE_STEPS=30 ROUNDS=2 TORCH=0 RUNS="$RUNS" timeout $(( $(left) - 15 )) bash tests/bench/ddp_table.sh
tar czf $OUT/logs.tgz -C $L .
echo "== end $(date +%T)"
