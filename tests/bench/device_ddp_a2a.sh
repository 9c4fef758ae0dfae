#!/usr/bin/env bash
# tests/bench/device_ddp_a2a.sh: 2 GPUs (nvidia-h200-x2), one short call, after tests/bench/prepare_device.sh
# here (carry dev/). Bucketed DDP with nccl.all_reduce = "alltoall" (each bucket an all-to-all, a sum and an
# all-gather): the tiny model against flat DDP with NCCL's all-reduce (checkpoints equal at gpu_ddp.sh's
# tolerance, on windows with the zero-CTA policy), then ddp_table.sh's RUNS (default: XL bucketed 10 MB, fp32
# gradients, on windows with the zero-CTA policy, NCCL's all-reduce against the all-to-all), ROUNDS rounds,
# TORCH=0 unless set.
set -u
cd "$(dirname "$0")/../.."
. tests/bench/device_env.sh
. tests/e2e/lib.sh
N=2
e2e_tmp ddp_a2a
cp schedules/lib/models.lua "$tmp/"
tiny='models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 })'
tdata='{ global_batch = 8, tokens = "random", seed = 5 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1 }'
write tiny_adam "$tiny" $N ', sync = "flat"' "$adam" 4 "$tdata"
write tiny_ar_a2a "$tiny" $N ', sync = "bucketed", bucket_mb = 0.05, overlap = "backward"' "$adam" 4 \
  "$tdata, nccl = { register = \"window\", cta_policy = \"zero\", all_reduce = \"alltoall\" }" &&
  same tiny_ar_a2a tiny_adam 1e-6 1e-7
echo "== table ($(date +%T))"
RUNS=${RUNS:-"ddp_fp32_winz ddp_fp32_a2a_winz"} ROUNDS=${ROUNDS:-2} TORCH=${TORCH:-0} bash tests/bench/ddp_table.sh 2>&1 | tail -8
exit $fail
