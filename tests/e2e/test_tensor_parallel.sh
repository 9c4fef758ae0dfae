#!/usr/bin/env bash
# tests/e2e/test_tensor_parallel.sh: tensor parallelism (mesh = { data = D, tensor = T }: Megatron column/row
# splits, the vocabulary-parallel embedding and cross-entropy) on the reference executor (ranks as threads),
# against one rank on the same global batch:
#  - tensor 2, 4 and 8; data 2 x tensor 2 and data 2 x tensor 4 (individual and bucketed sync), SGD, fp32:
#    the step losses and the final parameters allclose 1e-6 (relative; 1e-7 absolute); naive attention;
#  - AdamW with clipping (the gradient norm over the split and the whole units counted once), eps 1e-6:
#    losses 1e-6 and the final parameters and moments 1e-5 (AdamW divides by sqrt(v): where a gradient
#    is ~0 its ratio amplifies the last-bit differences of the tensor ranks' sums; with eps 1e-8 a handful
#    of 250k elements move by 2e-5 after 4 steps, with 1e-6 none does);
#  - bf16 (activations and GEMM operands): losses within 1e-2 of one rank;
#  - checkpoints: a tensor-parallel run's files have one rank's names and shapes; resume across layouts
#    (tensor 2 -> 1 rank, 1 rank -> data 2 x tensor 2, tensor 2 -> tensor 4) ends where the straight runs end;
#  - the plan: its communicators and mesh (ddpc inspect), the vocabulary-parallel cross-entropy's kernels;
#  - through the MPI backend (ranks as processes) when Open MPI is present: bit for bit the threads run;
#  - with ZeRO-1/2/3 and FSDP on the data axis (data 2 x tensor 2/4; ZeRO-2 also with nccl.reduce_scatter =
#    "alltoall", the all-to-alls on the data communicators; bucketed DDP with optimizer_overlap): equal
#    one rank (SGD 1e-6, AdamW 1e-5),
#    bf16 FSDP runs; resume 1 rank <-> FSDP x tensor; clipping that bites (0.05) with FSDP and ZeRO-1 x
#    tensor follows one rank (the norm's tables per run of split / whole units of each group slice);
#  - refusals in one line: heads, d_ff or vocab not divisible, a mesh whose product is not the world, an
#    axis of 0, an MLP, sharding with one replica, shard = "optimizer", a mesh disagreeing with pipeline{}
#    (pipelines x tensor parallelism: test_pipeline_tensor.sh).
. "$(dirname "$0")/lib.sh"
[ -n "${LSAN_OPTIONS:-}" ] && export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0" # see test_mpi.sh
e2e_tmp tensor_parallel
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

tiny='models.tiny({ d_model = 128, d_ff = 256, heads = 8, vocab = 64, context = 8, layers = 2 })'
data='{ global_batch = 8, tokens = "random", seed = 5 }'
sgd='sgd { lr = 0.1 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0, eps = 1e-6 }'

# run NAME MODEL PARALLEL MESH OPTIMIZER [PRECISION]: compile $tmp/NAME.lua and run it on the reference
# executor for 4 steps (step losses in $tmp/NAME.out, checkpoint in $tmp/NAME.ckpt)
run() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $2, data = $data, precision = "${6:-fp32}", optimizer = $5, parallel = $3, $4
                  steps = 4, seed = 3 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q 2>"$tmp/$1.err" || { fail "$1 does not compile: $(cat "$tmp/$1.err")"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" --device ref --checkpoint-dir "$tmp/$1.ckpt" >"$tmp/$1.out" 2>&1 ||
    { fail "$1 run: $(tail -3 "$tmp/$1.out")"; return 1; }
}

equal() { losses "$1" "$2" 1e-6 && files "$1" "$2" model 1e-6 1e-7; }

run base "$tiny" "single()" "" "$sgd"
run t2 "$tiny" "ddp { ranks = 2 }" "mesh = { tensor = 2 }," "$sgd" && equal t2 base
run t4 "$tiny" "ddp { ranks = 4 }" "mesh = { tensor = 4 }," "$sgd" && equal t4 base
run t8 "$tiny" "ddp { ranks = 8 }" "mesh = { tensor = 8 }," "$sgd" && equal t8 base
run d2t2 "$tiny" "ddp { ranks = 4 }" "mesh = { data = 2, tensor = 2 }," "$sgd" && equal d2t2 base
run d2t4 "$tiny" 'ddp { ranks = 8, sync = "individual" }' "mesh = { data = 2, tensor = 4 }," "$sgd" && equal d2t4 base
run d2t2_small "$tiny" "ddp { ranks = 4, bucket_mb = 0.05 }" "mesh = { data = 2, tensor = 2 }," "$sgd" && equal d2t2_small base
naive='models.tiny({ d_model = 128, d_ff = 256, heads = 8, vocab = 64, context = 8, layers = 2, attention = "naive" })'
run naive_1 "$naive" "single()" "" "$sgd"
run naive_t2 "$naive" "ddp { ranks = 2 }" "mesh = { tensor = 2 }," "$sgd" && equal naive_t2 naive_1

# with the ZeRO levels and FSDP on the data axis: each data rank's shard of its tensor rank's part (a
# row-parallel weight's slice cut mid-row gives up to 3 checkpoint pieces)
for lvl in zero1 zero2 zero3; do
  run "z_${lvl}" "$tiny" "ddp { ranks = 4, shard = \"$lvl\", bucket_mb = 0.05 }" "mesh = { data = 2, tensor = 2 }," "$sgd" &&
    equal "z_${lvl}" base
done
run fsdp_d2t4 "$tiny" "fsdp { ranks = 8 }" "mesh = { data = 2, tensor = 4 }," "$sgd" && equal fsdp_d2t4 base
# ... with the reduce-scatters as all-to-alls and sums on the data axis's communicators (nccl.reduce_scatter)
run z_zero2_a2a "$tiny" 'ddp { ranks = 4, shard = "zero2", bucket_mb = 0.05 }' \
  'mesh = { data = 2, tensor = 2 }, nccl = { reduce_scatter = "alltoall" },' "$sgd" && equal z_zero2_a2a base
adam_nc='adamw { lr = 1e-2, weight_decay = 0.1, eps = 1e-6 }'
run adam_nc_1 "$tiny" "single()" "" "$adam_nc"
run adam_fsdp "$tiny" "fsdp { ranks = 4 }" "mesh = { data = 2, tensor = 2 }," "$adam_nc" && losses adam_fsdp adam_nc_1 1e-6 &&
  files adam_fsdp adam_nc_1 model 1e-5 1e-6 && files adam_fsdp adam_nc_1 optimizer 1e-5 1e-7
# bucketed DDP with each bucket's update in the backward on the update stream (optimizer_overlap), data 2 x
# tensor 2
run adam_ddp_ov "$tiny" 'ddp { ranks = 4, sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true }' \
  'mesh = { data = 2, tensor = 2 },' "$adam_nc" && losses adam_ddp_ov adam_nc_1 1e-6 &&
  files adam_ddp_ov adam_nc_1 model 1e-5 1e-6 && files adam_ddp_ov adam_nc_1 optimizer 1e-5 1e-7
run bf_fsdp "$tiny" "fsdp { ranks = 4 }" "mesh = { data = 2, tensor = 2 }," "$sgd" bf16

# AdamW with clipping
run adam_1 "$tiny" "single()" "" "$adam"
for name in adam_t2:2:'{ tensor = 2 }' adam_d2t2:4:'{ data = 2, tensor = 2 }'; do
  IFS=: read -r n ranks mesh <<<"$name"
  run "$n" "$tiny" "ddp { ranks = $ranks }" "mesh = $mesh," "$adam" && losses "$n" adam_1 1e-6 &&
    files "$n" adam_1 model 1e-5 1e-6 && files "$n" adam_1 optimizer 1e-5 1e-7
done
# the clip scale must use every tensor rank's split gradients and the whole ones once: a clip that bites
# (0.05) would drift at once from one rank's if the norm counted the norms' weights twice or only rank 0's
clip='adamw { lr = 1e-2, clip = 0.05, eps = 1e-6 }'
run clip_1 "$tiny" "single()" "" "$clip"
run clip_t4 "$tiny" "ddp { ranks = 4 }" "mesh = { tensor = 4 }," "$clip" && losses clip_t4 clip_1 1e-6 &&
  files clip_t4 clip_1 model 1e-5 1e-6
# ... and with the data axis sharded: per group slice, a table per run of split / whole units
run clip_fsdp "$tiny" "fsdp { ranks = 4 }" "mesh = { data = 2, tensor = 2 }," "$clip" && losses clip_fsdp clip_1 1e-6 &&
  files clip_fsdp clip_1 model 1e-5 1e-6
run clip_zero1 "$tiny" 'ddp { ranks = 8, shard = "zero1", bucket_mb = 0.05 }' "mesh = { data = 2, tensor = 4 }," "$clip" &&
  losses clip_zero1 clip_1 1e-6 && files clip_zero1 clip_1 model 1e-5 1e-6

# bf16
run bf_1 "$tiny" "single()" "" "$sgd" bf16
run bf_t2 "$tiny" "ddp { ranks = 2 }" "mesh = { tensor = 2 }," "$sgd" bf16 && losses bf_t2 bf_1 1e-2

# checkpoints: one rank's names and shapes
same_names d2t2 base model && echo "ok: the tensor-parallel checkpoint has one rank's names and shapes"

# resume across layouts: 2 steps in one layout, 2 more in another, against the straight run of the second
resume_equal r_t2_to_1 adam_t2 adam_1 adam_1
resume_equal r_1_to_d2t2 adam_1 adam_d2t2 adam_d2t2
run adam_t4 "$tiny" "ddp { ranks = 4 }" "mesh = { tensor = 4 }," "$adam"
resume_equal r_t2_to_t4 adam_t2 adam_t4 adam_t4
# sharded: tensor rank 1 reads none of the whole parameters' pieces (rank 0's), the refresh broadcasts them
resume_equal r_1_to_fsdp adam_nc_1 adam_fsdp adam_fsdp
resume_equal r_fsdp_to_1 adam_fsdp adam_nc_1 adam_nc_1

# the plan: the mesh and its communicators, the vocabulary-parallel kernels, the collectives on them
"$DDPC" inspect "$tmp/d2t2.bin" >"$tmp/inspect.out" 2>&1 || fail "inspect: $(tail -2 "$tmp/inspect.out")"
grep -q "^communicators  *4$" "$tmp/inspect.out" || fail "inspect: the summary does not count 4 communicators"
grep -q "^parallel .*mesh data=2 tensor=2" "$tmp/inspect.out" || fail "inspect: the parallel line lacks the mesh"
for want in XENT_VP_STATS XENT_VP "layers.0.attn.output_proj.all_reduce" "layers.1.ln2.tp_copy.bwd" \
  "cross_entropy.all_gather" "token_embeddings.all_reduce"; do
  grep -qF "$want" "$tmp/inspect.out" || fail "inspect lacks '$want'"
done

# a data 2 x tensor 2 plan launched on 2 ranks: one line, non-zero
if "$DDPRUN" "$tmp/d2t2.bin" --device ref --nproc 2 >"$tmp/world.out" 2>&1; then fail "d2t2 ran on 2 ranks"
elif [ "$(wc -l <"$tmp/world.out")" != 1 ] || ! grep -q "compiled for 4 ranks, launched with --nproc 2" "$tmp/world.out"; then
  fail "d2t2 on 2 ranks: $(cat "$tmp/world.out")"
else echo "ok: wrong world: $(cat "$tmp/world.out")"; fi

# ranks as processes
mpi_same 4 d2t2 adam_d2t2

# refusals: one line naming the field, non-zero exit, no plan written
refuse() { # NAME PATTERN MODEL PARALLEL MESH
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $3, data = $data, optimizer = $sgd, parallel = $4, $5 steps = 1 }
LUA
  if "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" >"$tmp/$1.out" 2>&1; then fail "$1: compiled"; return; fi
  [ "$(wc -l <"$tmp/$1.out")" = 1 ] || { fail "$1: not one line: $(cat "$tmp/$1.out")"; return; }
  grep -qE -- "$2" "$tmp/$1.out" || { fail "$1: '$(cat "$tmp/$1.out")' lacks /$2/"; return; }
  [ -e "$tmp/$1.bin" ] && { fail "$1: left a plan"; return; }
  echo "ok: $1: $(cat "$tmp/$1.out")"
}
refuse heads "mesh.tensor must divide model.heads \(8\)" "$tiny" "ddp { ranks = 3 }" "mesh = { tensor = 3 },"
refuse d_ff "mesh.tensor must divide model.d_ff \(100\)" \
  'models.tiny({ d_model = 128, d_ff = 100, heads = 8, vocab = 64, context = 8, layers = 2 })' "ddp { ranks = 8 }" \
  "mesh = { tensor = 8 },"
refuse vocab "mesh.tensor must divide model.vocab \(60\)" \
  'models.tiny({ d_model = 128, d_ff = 256, heads = 8, vocab = 60, context = 8, layers = 2 })' "ddp { ranks = 8 }" \
  "mesh = { tensor = 8 },"
refuse product "mesh: data 2 x tensor 2 x pipeline 1 = 4 ranks, but parallel has 8" "$tiny" "ddp { ranks = 8 }" \
  "mesh = { data = 2, tensor = 2 },"
refuse zero_axis "mesh.tensor must be a positive integer, got 0" "$tiny" "ddp { ranks = 2 }" "mesh = { tensor = 0 },"
refuse not_table "mesh must be a table" "$tiny" "ddp { ranks = 2 }" "mesh = 2,"
refuse unknown_axis "expert is not a field of mesh" "$tiny" "ddp { ranks = 2 }" "mesh = { expert = 2 },"
refuse mlp "mesh.tensor splits a transformer" 'mlp { name = "m", layers = { linear({ name = "fc", in_features = 4, out_features = 4 }) } }' \
  "ddp { ranks = 2 }" "mesh = { tensor = 2 },"
refuse shard_one_replica "mesh.tensor = 2 with sharding needs mesh.data > 1: the shards split the data axis, and mesh.data is 1$" "$tiny" 'ddp { ranks = 2, shard = "zero1" }' \
  "mesh = { tensor = 2 },"
refuse shard_optimizer 'mesh.tensor = 2 with shard = "optimizer" is not supported \(use shard = "zero1", which keeps the same state per rank\)$' "$tiny" 'ddp { ranks = 4, shard = "optimizer" }' \
  "mesh = { data = 2, tensor = 2 },"

refuse pipe_axis "mesh.pipeline needs parallel = pipeline" "$tiny" "ddp { ranks = 4 }" "mesh = { tensor = 2, pipeline = 2 },"
refuse pipeline "mesh.pipeline must equal pipeline\{stages\} \(2\)" "$tiny" 'pipeline { stages = 2, microbatches = 2 }' \
  "mesh = { tensor = 2, pipeline = 4 }," # pipelines x tensor: test_pipeline_tensor.sh
exit $fail
