#!/usr/bin/env bash
# tests/e2e/test_ddp_equivalence.sh: the seeds' DDP correctness checks on the reference executor (ranks as
# threads, the same plans the GPUs run):
#  - ToyModel and ToyModelWithTiedWeights, 20 rows, MSE, SGD lr 0.1, 5 steps: 2 ranks (different init
#    seeds, parameters broadcast from rank 0, 10 rows each) in every sync mode and at bucket sizes
#    0.0016 / 0.0001 / 0.01 MB end with the same weights as 1 rank on all 20 rows (allclose 1e-5);
#  - sharded AdamW (lr 0.1, wd 0.1, betas 0.9/0.999, 10 steps) and ZeRO-1 equal plain AdamW DDP (1e-7);
#  - the tiny transformer in every mode on 2 and 3 ranks equals 1 rank on the same global batch (1e-6);
#  - AdamW with optimizer_overlap, alone and under ZeRO-1/2/3, and ZeRO-1/2 with param_gather =
#    "before_forward", equal AdamW DDP without them (1e-7);
#  - bucketed DDP whose updates read every rank's gradient (nccl.all_reduce = "peer") equals it too, and
#    "peer_copy" (the other ranks' bucket copied first) equals "peer" bit for bit, and its losses equal one
#    rank's on the same global batch (1e-5).
. "$(dirname "$0")/lib.sh"
e2e_tmp ddp
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

E2E_DEVICE=ref # write and same (lib.sh) on the reference executor
toy_data='{ global_batch = 20, rows = 20, seed = 7 }'
for model in toy toy_tied; do
  write "${model}_1" "models.$model()" 1 "" "sgd { lr = 0.1 }" 5 "$toy_data"
  for mode in naive flat individual; do
    extra=", sync = \"$mode\""; [ "$mode" = individual ] && extra="$extra, overlap = \"backward\""
    write "${model}_$mode" "models.$model()" 2 "$extra" "sgd { lr = 0.1 }" 5 "$toy_data" &&
      same "${model}_$mode" "${model}_1" 1e-5 1e-6 "$([ "$mode" = naive ] && echo 'Naive DDP matches baseline!')"
  done
  for mb in 0.0016 0.0001 0.01; do
    tag=${mb/./_}
    write "${model}_bucketed_$tag" "models.$model()" 2 ", sync = \"bucketed\", bucket_mb = $mb, overlap = \"backward\"" \
      "sgd { lr = 0.1 }" 5 "$toy_data" && same "${model}_bucketed_$tag" "${model}_1" 1e-5 1e-6
  done
done

# 4 and 8 ranks (24 rows: 6 or 3 per rank)
toy24='{ global_batch = 24, rows = 24, seed = 7 }'
write toy24_1 "models.toy()" 1 "" "sgd { lr = 0.1 }" 5 "$toy24"
for ranks in 4 8; do
  write "toy24_bucketed_$ranks" "models.toy()" $ranks ', sync = "bucketed", bucket_mb = 0.0016, overlap = "backward"' \
    "sgd { lr = 0.1 }" 5 "$toy24" && same "toy24_bucketed_$ranks" toy24_1 1e-5 1e-6
  [ $ranks = 8 ] && break # ZeRO-1 of ToyModel's 850 elements on 8 ranks: refused below
  write "toy24_zero1_$ranks" "models.toy()" $ranks ', sync = "flat", shard = "zero1"' \
    "adamw { lr = 0.1, weight_decay = 0.1, betas = { 0.9, 0.999 } }" 5 "$toy24"
  write "toy24_adam_$ranks" "models.toy()" $ranks ', sync = "flat"' \
    "adamw { lr = 0.1, weight_decay = 0.1, betas = { 0.9, 0.999 } }" 5 "$toy24" && same "toy24_zero1_$ranks" "toy24_adam_$ranks" 1e-7 0
done
# ZeRO shards are whole 64-element slices of each group: 850 elements cannot give 8 ranks a slice each
cat >"$tmp/toy24_zero1_8.lua" <<LUA
local models = require "models"
return schedule { model = models.toy(), data = $toy24, precision = "fp32", optimizer = sgd { lr = 0.1 },
                  parallel = ddp { ranks = 8, sync = "flat", shard = "zero1" }, steps = 5, seed = 3 }
LUA
if "$DDPC" "$tmp/toy24_zero1_8.lua" -o "$tmp/toy24_zero1_8.bin" -q 2>"$tmp/z8.err"; then
  fail "ZeRO-1 of ToyModel on 8 ranks compiled (rank 7 would hold only padding)"
elif grep -q "the shards cannot be balanced: rank 7 would hold no parameter elements" "$tmp/z8.err"; then
  echo "ok: ZeRO-1 of ToyModel on 8 ranks refused: $(head -1 "$tmp/z8.err")"
else
  fail "ZeRO-1 on 8 ranks: $(cat "$tmp/z8.err")"
fi

# optimizer sharding and ZeRO-1 against plain AdamW DDP
adam='adamw { lr = 0.1, weight_decay = 0.1, betas = { 0.9, 0.999 } }'
write toy_adam_ddp "models.toy()" 2 ", sync = \"flat\"" "$adam" 10 "$toy_data"
write toy_adam_sharded "models.toy()" 2 ", sync = \"flat\", shard = \"optimizer\"" "$adam" 10 "$toy_data" &&
  same toy_adam_sharded toy_adam_ddp 1e-7 0
write toy_adam_zero1 "models.toy()" 2 ", sync = \"flat\", shard = \"zero1\"" "$adam" 10 "$toy_data" &&
  same toy_adam_zero1 toy_adam_ddp 1e-7 0

# the tiny transformer on 1, 2 and 3 ranks (global batch 6); 4 and 8 ranks below (global batch 8)
tiny='models.tiny({ d_model = 32, d_ff = 64, heads = 2, vocab = 64, context = 8 })'
tdata='{ global_batch = 6, tokens = "random", seed = 5 }'
# SGD here: Adam's first step divides each gradient by its own magnitude, so an element whose gradient
# is ~eps amplifies last-bit differences of the reduction order into 1e-4 of lr; the sharded optimizers
# are compared under AdamW against DDP on the same ranks below.
tsgd='sgd { lr = 0.1 }'
write tiny_1 "$tiny" 1 "" "$tsgd" 4 "$tdata"
for ranks in 2 3; do
  for mode in naive flat individual bucketed; do
    case $mode in
      individual) extra=', sync = "individual", overlap = "backward"' ;;
      bucketed) extra=', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' ;;
      zero1) extra=', sync = "flat", shard = "zero1"' ;;
      sharded) extra=', sync = "bucketed", bucket_mb = 0.02, overlap = "backward", shard = "optimizer"' ;;
      *) extra=", sync = \"$mode\"" ;;
    esac
    write "tiny_${mode}_$ranks" "$tiny" $ranks "$extra" "$tsgd" 4 "$tdata" && same "tiny_${mode}_$ranks" tiny_1 1e-6 1e-7
  done
  tadam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0 }'
  write "tiny_adam_$ranks" "$tiny" $ranks ', sync = "flat"' "$tadam" 4 "$tdata"
  for mode in zero1 sharded; do
    case $mode in
      zero1) extra=', sync = "flat", shard = "zero1"' ;;
      sharded) extra=', sync = "bucketed", bucket_mb = 0.02, overlap = "backward", shard = "optimizer"' ;;
    esac
    write "tiny_${mode}_$ranks" "$tiny" $ranks "$extra" "$tadam" 4 "$tdata" && same "tiny_${mode}_$ranks" "tiny_adam_$ranks" 1e-7 0
  done
done
tdata8='{ global_batch = 8, tokens = "random", seed = 5 }'
write tiny8_1 "$tiny" 1 "" "$tsgd" 3 "$tdata8"
for ranks in 4 8; do
  write "tiny8_bucketed_$ranks" "$tiny" $ranks ', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' "$tsgd" 3 "$tdata8" &&
    same "tiny8_bucketed_$ranks" tiny8_1 1e-6 1e-7
done
# optimizer overlap (no clipping allowed with it) against the same AdamW without overlap
oadam='adamw { lr = 1e-2, weight_decay = 0.1 }'
write tiny_noover_2 "$tiny" 2 ', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' "$oadam" 4 "$tdata"
# on 2 and 3 ranks, against the same AdamW DDP: (o) bucketed DDP with each bucket updated during the
# backward on the update stream (optimizer_overlap), also with the all-to-all all-reduce of (a); (a) bucketed and flat DDP with each all-reduce an
# all-to-all, a sum of the received chunks and an all-gather (nccl.all_reduce = "alltoall"; on 3 ranks a
# bucket whose length is not a multiple of 3 keeps the all-reduce); (b) the ZeRO levels with each group's
# shard updated during the backward (on the communication stream, after its reduce-scatter). The
# all-to-all reductions add the ranks' gradients in rank order in f32 (the reference's collectives add them
# in double), so on 3 ranks a last-bit difference may reach the weights through Adam's division by
# sqrt(v) + eps: tolerance 1e-5 there
for ranks in 2 3; do
  [ $ranks = 3 ] && write tiny_noover_3 "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' "$oadam" 4 "$tdata"
  tol="1e-7 0"; [ $ranks = 3 ] && tol="1e-5 1e-6"
  ov=', sync = "bucketed", bucket_mb = 0.01, overlap = "backward", optimizer_overlap = true'
  write "tiny_optoverlap_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 "$tdata" && same "tiny_optoverlap_$ranks" "tiny_noover_$ranks" 1e-7 0
  write "tiny_ar_a2a_optoverlap_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 "$tdata, nccl = { all_reduce = \"alltoall\" }" &&
    same "tiny_ar_a2a_optoverlap_$ranks" "tiny_noover_$ranks" $tol
  # (p) no collective: each bucket's update reads every rank's gradient after a peer barrier and sums it in
  # rank order in f32, divided by the ranks (nccl.all_reduce = "peer"); on 2 ranks that is the all-reduce's
  # mean exactly, so bitwise; also with the last quarter of the buckets on the tail stream
  write "tiny_ar_peer_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 "$tdata, nccl = { all_reduce = \"peer\" }" &&
    same "tiny_ar_peer_$ranks" "tiny_noover_$ranks" $tol
  write "tiny_ar_peer_tail_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 \
    "$tdata, nccl = { all_reduce = \"peer\" }, streams = { update_tail = 0.25 }" &&
    same "tiny_ar_peer_tail_$ranks" "tiny_noover_$ranks" $tol
  # ... and with the other ranks' bucket first copied here ("peer_copy"), also with the tail stream's own buffer
  write "tiny_ar_pcopy_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 "$tdata, nccl = { all_reduce = \"peer_copy\" }" &&
    same "tiny_ar_pcopy_$ranks" "tiny_ar_peer_$ranks" 0 0
  write "tiny_ar_pcopy_tail_$ranks" "$tiny" $ranks "$ov" "$oadam" 4 \
    "$tdata, nccl = { all_reduce = \"peer_copy\" }, streams = { update_tail = 0.25 }" &&
    same "tiny_ar_pcopy_tail_$ranks" "tiny_ar_peer_$ranks" 0 0
  # ... and against one rank on the same global batch: the losses (Adam turns the last bits of a different
  # reduction order into ~1e-4 of a weight, see above; the losses stay within 1e-5)
  [ $ranks = 2 ] && write tiny_adam_1 "$tiny" 1 "" "$oadam" 4 "$tdata"
  for r in "tiny_adam_1 1" "tiny_ar_pcopy_$ranks $ranks"; do
    set -- $r
    "$DDPRUN" "$tmp/$1.bin" --device ref >"$tmp/$1.out" 2>&1 || fail "$1: run for its losses"
  done
  losses "tiny_ar_pcopy_$ranks" tiny_adam_1 1e-5
  write "tiny_ar_a2a_$ranks" "$tiny" $ranks ', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' "$oadam" 4 \
    "$tdata, nccl = { all_reduce = \"alltoall\" }" && same "tiny_ar_a2a_$ranks" "tiny_noover_$ranks" $tol
  # ... with the all-to-alls and all-gathers marked for copy-engine pulls (nccl.movement = "peer_copy"; the
  # reference runs them as the collectives): nothing else in the plan changes, so the same weights bit for bit
  write "tiny_ar_a2a_mv_$ranks" "$tiny" $ranks ', sync = "bucketed", bucket_mb = 0.01, overlap = "backward"' "$oadam" 4 \
    "$tdata, nccl = { all_reduce = \"alltoall\", movement = \"peer_copy\" }" && same "tiny_ar_a2a_mv_$ranks" "tiny_ar_a2a_$ranks" 0 0
  write "tiny_flat_a2a_$ranks" "$tiny" $ranks ', sync = "flat"' "$oadam" 4 "$tdata, nccl = { all_reduce = \"alltoall\" }" &&
    same "tiny_flat_a2a_$ranks" "tiny_noover_$ranks" $tol
  for shard in zero1 zero2 zero3; do
    write "tiny_${shard}_optoverlap_$ranks" "$tiny" $ranks ", sync = \"bucketed\", bucket_mb = 0.01, overlap = \"backward\", shard = \"$shard\", optimizer_overlap = true" \
      "$oadam" 4 "$tdata" && same "tiny_${shard}_optoverlap_$ranks" "tiny_noover_$ranks" 1e-7 0
    # ... with the reduce-scatter as an all-to-all and a sum of the received chunks (nccl.reduce_scatter)
    write "tiny_${shard}_a2a_$ranks" "$tiny" $ranks ", sync = \"bucketed\", bucket_mb = 0.01, overlap = \"backward\", shard = \"$shard\", optimizer_overlap = true" \
      "$oadam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\" }" && same "tiny_${shard}_a2a_$ranks" "tiny_noover_$ranks" $tol
  done
  # ZeRO-1/2 with a group of the fp32-read parameters (norm gains) beside each bucket (master_group =
  # "per_bucket"; the default puts them all in one group after the buckets): the same sums
  for shard in zero1 zero2; do
    write "tiny_${shard}_perbucket_$ranks" "$tiny" $ranks ", sync = \"bucketed\", bucket_mb = 0.01, overlap = \"backward\", shard = \"$shard\", optimizer_overlap = true, master_group = \"per_bucket\"" \
      "$oadam" 4 "$tdata" && same "tiny_${shard}_perbucket_$ranks" "tiny_noover_$ranks" 1e-7 0
  done
  # ... and ZeRO-1/2 with the parameters all-gathered at the next step's start (param_gather), with and
  # without the overlapped update: the checkpoint holds the masters, current after every step
  for shard in zero1 zero2; do
    for ov in false true; do
      write "tiny_${shard}_pgather_${ov}_$ranks" "$tiny" $ranks ", sync = \"bucketed\", bucket_mb = 0.01, shard = \"$shard\", param_gather = \"before_forward\", optimizer_overlap = $ov" \
        "$oadam" 4 "$tdata" && same "tiny_${shard}_pgather_${ov}_$ranks" "tiny_noover_$ranks" 1e-7 0
    done
  done
done
exit $fail
