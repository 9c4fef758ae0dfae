#!/usr/bin/env bash
# tests/e2e/test_zero_equivalence.sh: the ZeRO levels on the reference executor (ranks as threads), the
# tiny transformer on one global batch of 12 sequences:
#  - zero1 (flat and bucketed), zero2 and zero3 (one unit per block, and by size) on 2, 3 and 4 ranks end
#    with the same parameters as 1 rank (SGD, allclose 1e-6);
#  - zero3 on 1 rank is bitwise the unsharded single-rank run;
#  - FSDP's prefetch depth (0, 1, 2) and resharding (on, off) change nothing, bitwise;
#  - zero2 equals zero1 bitwise with the same buckets (same reduction order); under AdamW with clipping,
#    every level equals AdamW DDP on the same ranks (1e-7);
#  - checkpoints: a zero3 run on 4 ranks resumed on 4 ranks is bitwise the straight run; resumed unsharded
#    on 1 rank, a 1-rank run resumed with zero2 on 3 ranks and a zero2 3-rank run resumed with zero1 on 2
#    end where the straight runs end (AdamW: the moments move across layouts too; 1e-4, see below);
#  - zero1 with optimizer_overlap and param_gather = "before_forward", and fsdp{} with optimizer_overlap,
#    bitwise the same plans without them, and resumed bitwise (also by the plain plan); ZeRO-1 resumed
#    across master_group layouts, bucketed DDP with its updates reading the peers' gradients (peer_copy) resumed
#    as ZeRO-1 and back on 2 ranks, and bucketed DDP with the update in the backward resumed as ZeRO-1 and
#    back, bitwise.
. "$(dirname "$0")/lib.sh"
e2e_tmp zero
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"
E2E_DEVICE=ref

tiny='models.tiny({ d_model = 32, d_ff = 64, heads = 2, vocab = 64, context = 8 })'
data='{ global_batch = 12, tokens = "random", seed = 5 }'
sgd='sgd { lr = 0.1 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0 }'

# fsdp NAME RANKS OPTIONS OPTIMIZER STEPS: like write, with parallel = fsdp { ranks = RANKS OPTIONS }
fsdp() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $tiny, data = $data, precision = "fp32", optimizer = $4,
                  parallel = fsdp { ranks = $2 $3 }, steps = $5, seed = 3 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q || { fail "$1 does not compile"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" --device ref --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1 run"; return 1; }
}

write base_1 "$tiny" 1 "" "$sgd" 4 "$data"
for ranks in 2 3 4; do
  for level in zero1_flat zero1 zero2 zero3_size; do
    case $level in
      zero1_flat) extra=', sync = "flat", shard = "zero1"' ;;
      zero1) extra=', sync = "bucketed", bucket_mb = 0.01, shard = "zero1"' ;;
      zero2) extra=', sync = "bucketed", bucket_mb = 0.01, shard = "zero2"' ;;
      zero3_size) extra=', sync = "bucketed", bucket_mb = 0.01, shard = "zero3"' ;;
    esac
    write "${level}_$ranks" "$tiny" $ranks "$extra" "$sgd" 4 "$data" && same "${level}_$ranks" base_1 1e-6 1e-7
  done
  fsdp "fsdp_$ranks" $ranks "" "$sgd" 4 && same "fsdp_$ranks" base_1 1e-6 1e-7
done
fsdp zero3_on_1 1 "" "$sgd" 4 && same zero3_on_1 base_1 0 0
same zero2_2 zero1_2 0 0
for variant in "p0:, prefetch = 0" "p2:, prefetch = 2" "keep:, reshard_after_forward = false" \
               "mixed:, prefetch_forward = 2, prefetch_backward = 0, reshard_after_forward = false"; do
  fsdp "fsdp_${variant%%:*}_3" 3 "${variant#*:}" "$sgd" 4 && same "fsdp_${variant%%:*}_3" fsdp_3 0 0
done

# AdamW with gradient clipping: each level against AdamW DDP on the same ranks
for ranks in 2 3; do
  write "adam_ddp_$ranks" "$tiny" $ranks ', sync = "bucketed", bucket_mb = 0.01' "$adam" 4 "$data"
  for level in zero1 zero2 zero3; do
    write "adam_${level}_$ranks" "$tiny" $ranks ", sync = \"bucketed\", bucket_mb = 0.01, shard = \"$level\"" "$adam" 4 \
      "$data" && same "adam_${level}_$ranks" "adam_ddp_$ranks" 1e-7 1e-9
  done
  fsdp "adam_fsdp_$ranks" $ranks "" "$adam" 4 && same "adam_fsdp_$ranks" "adam_ddp_$ranks" 1e-7 1e-9
done

# checkpoints across layouts: 2 steps on one layout, then --resume to step 4 on another. On the same layout
# the resumed run is bitwise the straight one. Across layouts the first two steps summed the gradients in
# another order; AdamW's m / sqrt(v) turns those last-bit differences into ~1e-6 of a weight after two more
# steps (seen: 2.2e-6 on a 0.04 weight), so that comparison is allclose 1e-4 / 1e-5, and it would fail by
# orders of magnitude if a piece were misplaced (every weight moves by ~lr = 1e-2 per step).
resume() { # NAME FROM_BIN TO_BIN STRAIGHT RTOL ATOL
  "$DDPRUN" "$tmp/$2.bin" --device ref --steps 2 --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1: first half"; return; }
  "$DDPRUN" "$tmp/$3.bin" --device ref --steps 4 --checkpoint-dir "$tmp/$1.ckpt" --resume --quiet ||
    { fail "$1: resume"; return; }
  same "$1" "$4" "$5" "$6"
}
write adam_1 "$tiny" 1 "" "$adam" 4 "$data"
fsdp adam_fsdp_4 4 "" "$adam" 4
resume fsdp4_to_fsdp4 adam_fsdp_4 adam_fsdp_4 adam_fsdp_4 0 0
resume fsdp4_to_1 adam_fsdp_4 adam_1 adam_1 1e-4 1e-5
write adam_zero2_3b "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.02, shard = "zero2"' "$adam" 4 "$data"
resume one_to_zero2_3 adam_1 adam_zero2_3b adam_zero2_3b 1e-4 1e-5
resume zero2_3_to_zero1_2 adam_zero2_3b adam_zero1_2 adam_zero1_2 1e-4 1e-5
# the update in the backward (optimizer_overlap; no clipping, the norm needs every gradient first) and the
# all-gathers before the next forward (param_gather): bitwise the same level without them; resumed on the
# same layout bitwise the straight run; the plain plan resumes from their checkpoint bitwise
oadam='adamw { lr = 1e-2, weight_decay = 0.1 }'
write oadam_zero1_3 "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.01, shard = "zero1"' "$oadam" 4 "$data"
write ovl_zero1_3 "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.01, shard = "zero1", optimizer_overlap = true, param_gather = "before_forward"' \
  "$oadam" 4 "$data" && same ovl_zero1_3 oadam_zero1_3 0 0
resume ovl_zero1_3_resumed ovl_zero1_3 ovl_zero1_3 ovl_zero1_3 0 0
resume ovl_to_plain_zero1_3 ovl_zero1_3 oadam_zero1_3 oadam_zero1_3 0 0
# ... across the two layouts of the fp32-read parameters (master_group "per_bucket" -> "last", the default),
# and from bucketed DDP with each bucket's update in the backward to ZeRO-1 and back: the reference adds the
# ranks' gradients in the same order in every layout, so bitwise
write pb_zero1_3 "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.01, shard = "zero1", master_group = "per_bucket"' "$oadam" 4 "$data" &&
  same pb_zero1_3 oadam_zero1_3 0 0
resume pb_to_last_zero1_3 pb_zero1_3 oadam_zero1_3 oadam_zero1_3 0 0
resume last_to_pb_zero1_3 oadam_zero1_3 pb_zero1_3 pb_zero1_3 0 0
write ovl_ddp_3 "$tiny" 3 ', sync = "bucketed", bucket_mb = 0.01, optimizer_overlap = true' "$oadam" 4 "$data" &&
  same ovl_ddp_3 oadam_zero1_3 0 0
resume ovl_ddp_to_zero1_3 ovl_ddp_3 oadam_zero1_3 oadam_zero1_3 0 0
resume zero1_to_ovl_ddp_3 oadam_zero1_3 ovl_ddp_3 ovl_ddp_3 0 0
# ... and from bucketed DDP whose updates read the peers' gradients (nccl.all_reduce = "peer_copy") on 2 ranks,
# where its f32 sum halved equals the reference's reduction: bitwise ZeRO-1's, resumed both ways
write oadam_zero1_2 "$tiny" 2 ', sync = "bucketed", bucket_mb = 0.01, shard = "zero1"' "$oadam" 4 "$data"
write pcopy_ddp_2 "$tiny" 2 ', sync = "bucketed", bucket_mb = 0.01, optimizer_overlap = true' "$oadam" 4 \
  "$data, nccl = { all_reduce = \"peer_copy\" }" && same pcopy_ddp_2 oadam_zero1_2 0 0
resume pcopy_ddp_to_zero1_2 pcopy_ddp_2 oadam_zero1_2 oadam_zero1_2 0 0
resume zero1_to_pcopy_ddp_2 oadam_zero1_2 pcopy_ddp_2 pcopy_ddp_2 0 0
fsdp oadam_fsdp_3 3 "" "$oadam" 4
fsdp ovl_fsdp_3 3 ", optimizer_overlap = true" "$oadam" 4 && same ovl_fsdp_3 oadam_fsdp_3 0 0
resume ovl_fsdp_3_resumed ovl_fsdp_3 ovl_fsdp_3 ovl_fsdp_3 0 0
# the files themselves: a sharded run's checkpoint has the unsharded run's names and shapes
for f in model optimizer; do
  "$ST_COMPARE" "$(ckpt_latest "$tmp/adam_fsdp_4.ckpt")/$f.safetensors" "$(ckpt_latest "$tmp/adam_1.ckpt")/$f.safetensors" \
    --rtol 1e-5 --atol 1e-7 >"$tmp/cmp" 2>&1 || fail "$f.safetensors of fsdp on 4 ranks vs 1 rank: $(tail -2 "$tmp/cmp")"
done
[ $fail = 0 ] && echo "zero levels: every layout equals 1 rank; prefetch and resharding bitwise; checkpoints move across layouts"
exit $fail
