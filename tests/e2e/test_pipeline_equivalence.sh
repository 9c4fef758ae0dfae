#!/usr/bin/env bash
# tests/e2e/test_pipeline_equivalence.sh: pipelines on the reference executor (ranks as threads, SEND/RECV
# between them), against one rank on the same global batch:
#  - the tiny transformer with 4 layers: sequential on 2 stages; GPipe, 1F1B, zero bubble on 2, 3, 4 stages with 4
#    and 8 microbatches; interleaved 1F1B on 2 stages x 2 virtual stages; a given split (1, 3) and the
#    compiler's balanced one; one stage (gradient accumulation: 4 microbatches on one rank, 2 on each of 2
#    replicas); SGD, allclose 1e-6 (microbatches add the same gradient in another order);
#  - a seed-style MLP (5 layers: Linear, ReLU, Linear, ReLU, Linear) on 2 and 3 stages, 1F1B, SGD, 1e-6;
#  - AdamW with clipping, 1F1B on 2 stages, against AdamW on one rank;
#  - checkpoints: the files of a pipeline run have the names and shapes of one rank's; 2 steps on 2 stages
#    resumed on one rank, and 2 steps on one rank resumed on 3 stages, end where the straight runs end.
. "$(dirname "$0")/lib.sh"
e2e_tmp pipeline_equivalence
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

tiny='models.tiny({ d_model = 32, d_ff = 64, heads = 2, vocab = 64, context = 8, layers = 4 })'
data='{ global_batch = 8, tokens = "random", seed = 5 }'
sgd='sgd { lr = 0.1 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0 }'

# run NAME MODEL PARALLEL OPTIMIZER STEPS DATA: compile $tmp/NAME.lua and run it on the reference executor
run() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $2, data = $6, precision = "fp32", optimizer = $4, parallel = $3, steps = $5, seed = 3 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q || { fail "$1 does not compile"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" --device ref --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1 run"; return 1; }
  # the cost model simulates every rank's sends and receives (NCCL's group semantics)
  "$DDPC" explain "$tmp/$1.bin" --json >"$tmp/$1.explain" 2>&1 &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(r['step_ms'] > 0 for r in d['ranks'])" \
      "$tmp/$1.explain" 2>/dev/null || { fail "$1: ddpc explain: $(head -c 300 "$tmp/$1.explain")"; return 1; }
}

run base "$tiny" "single()" "$sgd" 4 "$data"
run seq_2 "$tiny" 'pipeline { stages = 2, microbatches = 1, schedule = "sequential" }' "$sgd" 4 "$data" &&
  same seq_2 base 1e-6 1e-7
for stages in 2 3 4; do
  for sched in gpipe 1f1b zero_bubble; do
    for m in 4 8; do
      run "${sched}_${stages}_$m" "$tiny" "pipeline { stages = $stages, microbatches = $m, schedule = \"$sched\" }" "$sgd" 4 \
        "$data" && same "${sched}_${stages}_$m" base 1e-6 1e-7
    done
  done
done
run inter_2 "$tiny" 'pipeline { stages = 2, virtual_stages = 2, microbatches = 4, schedule = "interleaved" }' "$sgd" 4 \
  "$data" && same inter_2 base 1e-6 1e-7
run split_13 "$tiny" 'pipeline { stages = 2, microbatches = 4, split = { 1, 3 } }' "$sgd" 4 "$data" &&
  same split_13 base 1e-6 1e-7
# one stage: gradient accumulation on one rank (and per replica with replicas = 2)
run accum_1 "$tiny" 'pipeline { stages = 1, microbatches = 4 }' "$sgd" 4 "$data" && same accum_1 base 1e-6 1e-7
run accum_1x2 "$tiny" 'pipeline { stages = 1, replicas = 2, microbatches = 2 }' "$sgd" 4 "$data" &&
  same accum_1x2 base 1e-6 1e-7

# a seed-style MLP of five layers
mlp='mlp { name = "deep", layers = {
  linear({ name = "fc1", in_features = 10, out_features = 16 }), relu({ name = "r1" }),
  linear({ name = "fc2", in_features = 16, out_features = 16 }), relu({ name = "r2" }),
  linear({ name = "fc3", in_features = 16, out_features = 5 }) } }'
mdata='{ global_batch = 20, rows = 20, seed = 7 }'
run mlp_1 "$mlp" "single()" "$sgd" 5 "$mdata"
for stages in 2 3; do
  run "mlp_$stages" "$mlp" "pipeline { stages = $stages, microbatches = 4, schedule = \"1f1b\" }" "$sgd" 5 "$mdata" &&
    same "mlp_$stages" mlp_1 1e-6 1e-7
done

# AdamW with gradient clipping (the norm is summed over every stage)
run adam_1 "$tiny" "single()" "$adam" 4 "$data"
run adam_pipe "$tiny" 'pipeline { stages = 2, microbatches = 4 }' "$adam" 4 "$data" && same adam_pipe adam_1 1e-4 1e-6

# checkpoints: the usual files; resumed across splits
for f in model optimizer; do
  "$ST_COMPARE" "$(ckpt_latest "$tmp/adam_pipe.ckpt")/$f.safetensors" "$(ckpt_latest "$tmp/adam_1.ckpt")/$f.safetensors" \
    --rtol 1e-4 --atol 1e-6 >"$tmp/cmp" 2>&1 || fail "$f.safetensors of a 2-stage run vs one rank: $(tail -2 "$tmp/cmp")"
done
resume() { # NAME FROM TO STRAIGHT
  "$DDPRUN" "$tmp/$2.bin" --device ref --steps 2 --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1: first half"; return; }
  "$DDPRUN" "$tmp/$3.bin" --device ref --steps 4 --checkpoint-dir "$tmp/$1.ckpt" --resume --quiet || { fail "$1: resume"; return; }
  same "$1" "$4" 1e-4 1e-6
}
run adam_3 "$tiny" 'pipeline { stages = 3, microbatches = 2 }' "$adam" 4 "$data"
resume pipe2_to_1 adam_pipe adam_1 adam_1
resume one_to_pipe3 adam_1 adam_3 adam_3
# the timeline of a real 1F1B step: every microbatch's forward and backward on both workers, the formula
"$DDPRUN" "$tmp/1f1b_2_4.bin" --device ref --steps 2 --trace "$tmp/trace.json" --metrics "$tmp/m.jsonl" --quiet ||
  fail "1f1b trace run"
"$DDPC" plot timeline -o "$tmp/timeline.svg" "$tmp"/trace.rank0.json "$tmp"/trace.rank1.json >"$tmp/tl.out" 2>&1 ||
  fail "timeline: $(cat "$tmp/tl.out")"
grep -q '"bubble_formula": 0.2000, "formula": "(p-1)/(m+p-1)"' "$tmp/tl.out" || fail "timeline formula: $(cat "$tmp/tl.out")"
python3 - "$tmp/timeline.svg" <<'PY' || fail "timeline SVG"
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
# the boxes' titles, not their text labels: a label is drawn only where the box is wide enough, which
# depends on the measured times (a loaded machine squeezed some boxes under it)
titles = [t.firstChild.data for t in d.getElementsByTagName("title") if t.firstChild]
counts = {m: sum(t.startswith((f"pp.fwd.mb{m}.", f"pp.bwd.mb{m}.")) for t in titles) for m in range(4)}
assert all(c >= 4 for c in counts.values()), counts  # 2 workers x (forward, backward) per microbatch
print(f"ok: timeline of 1F1B on 2 stages: boxes per microbatch {counts}")
PY
grep -q '"rank_forward_ms": \[' "$tmp/m.jsonl" || fail "metrics without per-rank forward times"
[ $fail = 0 ] && echo "pipelines: every schedule and split equals one rank; checkpoints move across splits"
exit $fail
