#!/usr/bin/env bash
# tests/e2e/test_pipeline_replicas.sh: pipelines with data-parallel replicas (pipeline{stages = 2,
# replicas = 2}: 4 ranks, rank = replica x stages + stage, each stage's gradients all-reduced over its
# replicas on the stage's communicator) on the reference executor (ranks as threads), against one rank on the
# same global batch:
#  - every schedule (sequential, gpipe, 1f1b, interleaved, zero_bubble) on the tiny transformer and on a
#    seed-style MLP (Linear, ReLU, Linear, ReLU, Linear), SGD, fp32: the step losses and the final
#    parameters allclose 1e-6;
#  - other meshes: 3 stages x 2 replicas, 2 stages x 4 replicas;
#  - AdamW with clipping (the gradient norm over the replica's stages) against AdamW on one rank;
#  - the plan: its communicators (ddpc inspect), the files of a 2x2 checkpoint have one rank's names;
#  - resume across layouts: 2x2 -> 1 rank, 2x2 -> 2 stages, 1 rank -> 2x2 end where the straight runs end,
#    and 2x2 -> 2x2 ends bit for bit where the straight 2x2 run ends;
#  - through the MPI backend (ranks as processes, `mpirun -n 4`; skipped where Open MPI is absent): the stage
#    communicators become MPI communicators; checkpoints and losses bit for bit equal to the threads run;
#  - the shipped schedules/pipeline_2x2.lua runs; bad replicas are refused in one line.
. "$(dirname "$0")/lib.sh"
[ -n "${LSAN_OPTIONS:-}" ] && export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0" # see test_mpi.sh
e2e_tmp pipeline_replicas
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

tiny='models.tiny({ d_model = 32, d_ff = 64, heads = 2, vocab = 64, context = 8, layers = 4 })'
data='{ global_batch = 8, tokens = "random", seed = 5 }'
sgd='sgd { lr = 0.1 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0 }'

# run NAME MODEL PARALLEL OPTIMIZER STEPS DATA: compile $tmp/NAME.lua, run it on the reference executor
# (step losses in $tmp/NAME.out)
run() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $2, data = $6, precision = "fp32", optimizer = $4, parallel = $3, steps = $5, seed = 3 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q 2>"$tmp/$1.err" || { fail "$1 does not compile: $(cat "$tmp/$1.err")"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" --device ref --checkpoint-dir "$tmp/$1.ckpt" >"$tmp/$1.out" 2>&1 ||
    { fail "$1 run: $(tail -3 "$tmp/$1.out")"; return 1; }
}

# equal NAME BASE TOL: losses and final parameters agree
equal() { losses "$1" "$2" "$3" && same "$1" "$2" "$3" 1e-7; }

run base "$tiny" "single()" "$sgd" 4 "$data"
run seq_22 "$tiny" 'pipeline { stages = 2, replicas = 2, microbatches = 1, schedule = "sequential" }' "$sgd" 4 "$data" &&
  equal seq_22 base 1e-6
for sched in gpipe 1f1b zero_bubble; do
  for m in 2 4; do
    run "${sched}_22_$m" "$tiny" "pipeline { stages = 2, replicas = 2, microbatches = $m, schedule = \"$sched\" }" "$sgd" 4 \
      "$data" && equal "${sched}_22_$m" base 1e-6
  done
done
# other meshes: 3 stages x 2 replicas (6 ranks), 2 stages x 4 replicas (8 ranks, one sequence per microbatch)
run mesh_32 "$tiny" 'pipeline { stages = 3, replicas = 2, microbatches = 2, schedule = "1f1b" }' "$sgd" 4 "$data" &&
  equal mesh_32 base 1e-6
run mesh_24 "$tiny" 'pipeline { stages = 2, replicas = 4, microbatches = 2, schedule = "zero_bubble", bucket_mb = 0.02 }' \
  "$sgd" 4 "$data" && equal mesh_24 base 1e-6

# initialisation: replica 1 draws its own values and receives replica 0's (broadcast, the default), or draws
# the same ones (identical_init, no broadcast)
run ident_22 "$tiny" 'pipeline { stages = 2, replicas = 2, microbatches = 2, broadcast = false, identical_init = true }' \
  "$sgd" 4 "$data" && equal ident_22 base 1e-6
"$DDPC" inspect "$tmp/ident_22.bin" | grep -q "broadcast.stage" && fail "ident_22 broadcasts its parameters"
run inter_22 "$tiny" 'pipeline { stages = 2, replicas = 2, virtual_stages = 2, microbatches = 2, schedule = "interleaved" }' \
  "$sgd" 4 "$data" && equal inter_22 base 1e-6

# small buckets (bucket_mb): each stage's gradients all-reduced in several buckets, each as soon as the last
# microbatch's backward has written it; interleaved: a later chunk's buckets go out while an earlier chunk's
# backward still runs
for sched in 1f1b zero_bubble interleaved; do
  v=1; [ $sched = interleaved ] && v=2
  run "bk_$sched" "$tiny" "pipeline { stages = 2, replicas = 2, virtual_stages = $v, microbatches = 2, schedule = \"$sched\", bucket_mb = 0.02 }" \
    "$sgd" 4 "$data" && equal "bk_$sched" base 1e-6
done
"$DDPC" inspect "$tmp/bk_interleaved.bin" >"$tmp/bk.out" 2>&1
python3 - "$tmp/bk.out" <<'PY' || fail "bucketed all-reduce: $(cat "$tmp/bk.err" 2>/dev/null)"
import re, sys
text = open(sys.argv[1]).read()
rank0 = text.split("== program rank 0 step ==")[1].split("== program rank")[0]
ar = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+1\s+all_reduce .*all_reduce\.stage0\.bucket", rank0, re.M)]
bwd = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+0\s+range_push .*name=pp\.bwd\.", rank0, re.M)]
ok = len(ar) >= 2 and bwd and min(ar) < max(bwd)
if not ok:
    open(sys.argv[1].rsplit("/", 1)[0] + "/bk.err", "w").write(f"all-reduces at {ar}, backward ranges at {bwd}")
    sys.exit(1)
print(f"ok: interleaved 2x2, stage 0: {len(ar)} bucket all-reduces, the first at {min(ar)} before the last backward at {max(bwd)}")
PY

# the seed-style MLP: 20 rows, 10 per replica
mlp='mlp { name = "deep", layers = {
  linear({ name = "fc1", in_features = 10, out_features = 16 }), relu({ name = "r1" }),
  linear({ name = "fc2", in_features = 16, out_features = 16 }), relu({ name = "r2" }),
  linear({ name = "fc3", in_features = 16, out_features = 5 }) } }'
mdata='{ global_batch = 20, rows = 20, seed = 7 }'
run mlp_1 "$mlp" "single()" "$sgd" 5 "$mdata"
run mlp_seq "$mlp" 'pipeline { stages = 2, replicas = 2, microbatches = 1, schedule = "sequential" }' "$sgd" 5 "$mdata" &&
  equal mlp_seq mlp_1 1e-6
for sched in gpipe 1f1b zero_bubble; do
  run "mlp_$sched" "$mlp" "pipeline { stages = 2, replicas = 2, microbatches = 5, schedule = \"$sched\" }" "$sgd" 5 "$mdata" &&
    equal "mlp_$sched" mlp_1 1e-6
done
run mlp_inter "$mlp" 'pipeline { stages = 2, replicas = 2, virtual_stages = 2, microbatches = 2, schedule = "interleaved" }' \
  "$sgd" 5 "$mdata" && equal mlp_inter mlp_1 1e-6

# the plan: 4 ranks, comm 1..2 the stages' replicas, comm 3..4 the replicas' stages
"$DDPC" inspect "$tmp/1f1b_22_2.bin" >"$tmp/inspect.out" 2>&1 || fail "inspect: $(tail -2 "$tmp/inspect.out")"
for want in "comm 1: ranks 0 2 (stage 0)" "comm 2: ranks 1 3 (stage 1)" "comm 3: ranks 0 1 (replica 0)" \
  "comm 4: ranks 2 3 (replica 1)" "rank 3: stage 1, replica 1"; do
  grep -qF "$want" "$tmp/inspect.out" || fail "inspect lacks '$want'"
done
grep -q "all_reduce.*comm=1" "$tmp/inspect.out" || fail "inspect: no all-reduce on comm 1"
grep -q "^communicators  *4$" "$tmp/inspect.out" || fail "inspect: the summary does not count 4 communicators"

# ddpc explain simulates every rank (group all-reduces timed with the group's size)
for name in 1f1b_22_2 bk_interleaved mesh_24; do
  "$DDPC" explain "$tmp/$name.bin" --json >"$tmp/$name.explain" 2>&1 &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['ranks']) == int(sys.argv[2]) and all(r['step_ms'] > 0 for r in d['ranks'])" \
      "$tmp/$name.explain" "$([ $name = mesh_24 ] && echo 8 || echo 4)" 2>/dev/null ||
    fail "$name: ddpc explain: $(head -c 300 "$tmp/$name.explain")"
done

# AdamW with clipping
run adam_1 "$tiny" "single()" "$adam" 4 "$data"
run adam_22 "$tiny" 'pipeline { stages = 2, replicas = 2, microbatches = 2 }' "$adam" 4 "$data" && losses adam_22 adam_1 1e-5 &&
  same adam_22 adam_1 1e-4 1e-6
run adam_2 "$tiny" 'pipeline { stages = 2, microbatches = 2 }' "$adam" 4 "$data"
for f in model optimizer; do
  "$ST_COMPARE" "$(ckpt_latest "$tmp/adam_22.ckpt")/$f.safetensors" "$(ckpt_latest "$tmp/adam_1.ckpt")/$f.safetensors" \
    --rtol 1e-4 --atol 1e-6 >"$tmp/cmp" 2>&1 || fail "$f.safetensors of a 2x2 run vs one rank: $(tail -2 "$tmp/cmp")"
done
resume() { resume_halves "$1" "$2" "$3" && same "$1" "$4" "$5" "$6"; } # NAME FROM TO STRAIGHT RTOL ATOL
resume r22_to_1 adam_22 adam_1 adam_1 1e-4 1e-6
resume r22_to_2 adam_22 adam_2 adam_2 1e-4 1e-6
resume r1_to_22 adam_1 adam_22 adam_22 1e-4 1e-6
resume r22_to_22 adam_22 adam_22 adam_22 0 0

# ranks as processes
mpi_same 4 zero_bubble_22_4 adam_22

# the shipped schedule
"$DDPC" "$DDP_SOURCE_DIR/schedules/pipeline_2x2.lua" -o "$tmp/shipped.bin" -q && "$DDPRUN" "$tmp/shipped.bin" --device ref \
  --steps 2 --trace "$tmp/tr.json" --metrics "$tmp/m.jsonl" --quiet >"$tmp/shipped.out" 2>&1 ||
  fail "schedules/pipeline_2x2.lua: $(tail -2 "$tmp/shipped.out")"
# traces and metrics per rank: 4 workers, stages 0 1 0 1, the bubble formula of one replica's pipeline
"$DDPC" plot timeline -o "$tmp/tl.svg" "$tmp"/tr.rank{0,1,2,3}.json >"$tmp/tl.out" 2>&1 || fail "timeline: $(cat "$tmp/tl.out")"
[ "$(grep -o '"worker": [0-9], "stage": [0-9]' "$tmp/tl.out" | tr -d '\n')" = \
  '"worker": 0, "stage": 0"worker": 1, "stage": 1"worker": 2, "stage": 0"worker": 3, "stage": 1' ] ||
  fail "timeline workers: $(cat "$tmp/tl.out")"
grep -q '"bubble_formula": 0.3333, "formula": "(p-1)/(m+p-1)"' "$tmp/tl.out" || fail "timeline formula: $(cat "$tmp/tl.out")"
grep -q '"rank_comm_ms": \[[^]]*,[^]]*,[^]]*,' "$tmp/m.jsonl" || fail "metrics without 4 ranks' comm times"

# bad replicas: one line, exit 1, no plan
bad() { # NAME PARALLEL DATA WANT
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $tiny, data = $3, optimizer = $sgd, parallel = $2, steps = 1 }
LUA
  local rc=0
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" 2>"$tmp/$1.err" || rc=$?
  if [ $rc != 1 ] || [ "$(cat "$tmp/$1.err")" != "$tmp/$1.lua:$4" ] || [ -e "$tmp/$1.bin" ]; then
    fail "$1: exit $rc, '$(cat "$tmp/$1.err")', want '$tmp/$1.lua:$4'"
  else
    echo "ok: $1: $(cat "$tmp/$1.err")"
  fi
}
bad replicas_0 'pipeline { stages = 2, replicas = 0 }' "$data" \
  "2: parallel.replicas must be a positive integer, got 0"
bad replicas_batch 'pipeline { stages = 2, replicas = 3 }' "$data" \
  "2: data.global_batch must be divisible by parallel.replicas (3), got 8"
bad bucket_one 'pipeline { stages = 2, bucket_mb = 1 }' "$data" \
  "2: parallel.bucket_mb only applies with replicas > 1 (the replicas of a stage all-reduce its gradients)"
bad replicas_mb 'pipeline { stages = 2, replicas = 2, microbatches = 3 }' "$data" \
  "2: parallel.microbatches = 3 does not divide the replica's batch of 4 sequences (data.global_batch 8 / replicas 2)"
[ $fail = 0 ] && echo "pipelines x replicas: every schedule as 2 stages x 2 replicas equals one rank; checkpoints move across layouts"
exit $fail
