#!/usr/bin/env bash
# tests/e2e/test_pipeline_tensor.sh: pipelines composed with tensor parallelism (parallel = pipeline{...} with
# mesh = { data = D, tensor = T, pipeline = P }: world D x P x T, rank (d P + s) T + t) on the reference
# executor (ranks as threads), against one rank on the same global batch (tiny model, 4 layers, batch 8):
#  - SGD, fp32, 4 steps: pipeline 2 x tensor 2 (1f1b with 2 and 4 microbatches), data 2 x tensor 2 x
#    pipeline 2 (gpipe, 1f1b, zero_bubble: its weight-gradient stash moves the tensor patches' instructions),
#    interleaved (virtual 2) x tensor 2: step losses and final parameters allclose 1e-6 (relative; 1e-7
#    absolute). A wrong patch (tensor communicator, vocabulary offset, the cross-entropy statistics' slice on
#    a microbatch's copy, the residual on tensor rank 0 only), a peer on another tensor rank, the loss scale
#    not divided by the microbatches or a split unit drawn with tensor rank 0's values moves them at step 1;
#  - AdamW with clipping (eps 1e-6; a clip of 0.05 that bites at once): losses 1e-6, parameters and moments
#    1e-5: the gradient norm counts split units over the tensor ranks and whole units once;
#  - checkpoints: one rank's names and shapes; resume 2 x 2 x 2 -> 1 rank and 1 rank -> 2 x 2 x 2 ends where
#    the straight runs end (every tensor rank of a stage loads its whole parameters: the norms);
#  - ddpc inspect shows the 3-D mesh and its communicators;
#  - refusals stay one line (a mesh that disagrees with pipeline{}, tensor not dividing the heads, sharding).
. "$(dirname "$0")/lib.sh"
e2e_tmp pipeline_tensor
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

tiny='models.tiny({ d_model = 128, d_ff = 256, heads = 8, vocab = 64, context = 8, layers = 4 })'
data='{ global_batch = 8, tokens = "random", seed = 5 }'
sgd='sgd { lr = 0.1 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0, eps = 1e-6 }'
clip='adamw { lr = 1e-2, clip = 0.05, eps = 1e-6 }'

# run NAME PARALLEL MESH OPTIMIZER: compile $tmp/NAME.lua, run it on the reference executor for 4 steps
run() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $tiny, data = $data, precision = "fp32", optimizer = $4, parallel = $2, $3
                  steps = 4, seed = 3 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q 2>"$tmp/$1.err" || { fail "$1 does not compile: $(cat "$tmp/$1.err")"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" --device ref --checkpoint-dir "$tmp/$1.ckpt" >"$tmp/$1.out" 2>&1 ||
    { fail "$1 run: $(tail -3 "$tmp/$1.out")"; return 1; }
}

equal() { losses "$1" "$2" 1e-6 && files "$1" "$2" model 1e-6 1e-7; }

run base "single()" "" "$sgd"
run p2t2_m2 'pipeline { stages = 2, microbatches = 2 }' "mesh = { tensor = 2 }," "$sgd" && equal p2t2_m2 base
run p2t2_m4 'pipeline { stages = 2, microbatches = 4 }' "mesh = { tensor = 2, pipeline = 2 }," "$sgd" &&
  equal p2t2_m4 base
for sched in gpipe 1f1b zero_bubble; do
  run "d2t2p2_$sched" "pipeline { stages = 2, replicas = 2, microbatches = 2, schedule = \"$sched\" }" \
    "mesh = { data = 2, tensor = 2, pipeline = 2 }," "$sgd" && equal "d2t2p2_$sched" base
done
run il_t2 'pipeline { stages = 2, microbatches = 2, schedule = "interleaved", virtual_stages = 2 }' \
  "mesh = { tensor = 2 }," "$sgd" && equal il_t2 base

# AdamW with clipping
run adam_1 "single()" "" "$adam"
run adam_d2t2p2 'pipeline { stages = 2, replicas = 2, microbatches = 2 }' "mesh = { data = 2, tensor = 2 }," "$adam" &&
  losses adam_d2t2p2 adam_1 1e-6 && files adam_d2t2p2 adam_1 model 1e-5 1e-6 &&
  files adam_d2t2p2 adam_1 optimizer 1e-5 1e-7
run clip_1 "single()" "" "$clip"
run clip_p2t2 'pipeline { stages = 2, microbatches = 4 }' "mesh = { tensor = 2 }," "$clip" &&
  losses clip_p2t2 clip_1 1e-6 && files clip_p2t2 clip_1 model 1e-5 1e-6

# checkpoints: one rank's names and shapes
same_names adam_d2t2p2 adam_1 model optimizer && echo "ok: the pipeline x tensor checkpoint has one rank's names and shapes"

# resume across layouts: 2 steps in one layout, 2 more in another, against the straight run of the second
resume_equal r_d2t2p2_to_1 adam_d2t2p2 adam_1 adam_1
resume_equal r_1_to_d2t2p2 adam_1 adam_d2t2p2 adam_d2t2p2

# the plan: the 3-D mesh and its communicators
"$DDPC" inspect "$tmp/d2t2p2_1f1b.bin" >"$tmp/inspect.out" 2>&1 || fail "inspect: $(tail -2 "$tmp/inspect.out")"
for want in "mesh: 2 stages x 2 replicas x 2 tensor ranks = 8 ranks" "rank 5: stage 0, replica 1, tensor 1" \
  "comm 1: ranks 0 4 (stage 0, tensor 0: its replicas)" "comm 8: ranks 5 7 (replica 1, tensor 1: its stages)" \
  "comm 12: ranks 6 7 (replica 1, stage 1: its tensor ranks)" \
  "mesh: data 2 x pipeline 2 x tensor 2 = 8 ranks" "comm 10: ranks 2 3 (tensor group of replica 0, stage 1)" \
  "equals the extras (reconciles)"; do
  grep -qF "$want" "$tmp/inspect.out" || fail "inspect lacks '$want'"
done
grep -q "^communicators  *12$" "$tmp/inspect.out" || fail "inspect: the summary does not count 12 communicators"
"$DDPC" inspect "$tmp/d2t2p2_1f1b.bin" --json >"$tmp/inspect.json" 2>&1 || fail "inspect --json"
python3 - "$tmp/inspect.json" <<'PY' || fail "inspect --json: the pipeline's ranks lack their tensor rank"
import json, sys
d = json.load(open(sys.argv[1]))
pp = d["pipeline"]
assert pp["tensor"] == 2 and [(r["stage"], r["replica"], r["tensor"]) for r in pp["ranks"]][5] == (0, 1, 1)
PY
echo "ok: inspect shows the 3-D mesh"

# refusals: one line naming the field, non-zero exit, no plan written
refuse() { # NAME PATTERN PARALLEL MESH
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $tiny, data = $data, optimizer = $sgd, parallel = $3, $4 steps = 1 }
LUA
  if "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" >"$tmp/$1.out" 2>&1; then fail "$1: compiled"; return; fi
  [ "$(wc -l <"$tmp/$1.out")" = 1 ] || { fail "$1: not one line: $(cat "$tmp/$1.out")"; return; }
  grep -qE -- "$2" "$tmp/$1.out" || { fail "$1: '$(cat "$tmp/$1.out")' lacks /$2/"; return; }
  [ -e "$tmp/$1.bin" ] && { fail "$1: left a plan"; return; }
  echo "ok: $1: $(cat "$tmp/$1.out")"
}
refuse stages "mesh.pipeline must equal pipeline\{stages\} \(2\)" 'pipeline { stages = 2 }' "mesh = { tensor = 2, pipeline = 4 },"
refuse replicas "mesh.data must equal pipeline\{replicas\} \(1\)" 'pipeline { stages = 2 }' "mesh = { tensor = 2, data = 2 },"
refuse heads "mesh.tensor must divide model.heads \(8\)" 'pipeline { stages = 2 }' "mesh = { tensor = 3 },"
exit $fail
