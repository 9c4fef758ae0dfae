#!/usr/bin/env bash
# tests/bench/cpu_pipeline_pictures.sh OUTDIR: the seeds' pictures of pipelines on the CPU (reference
# executor, ranks as threads, 3 workers as in the handout): a tiny transformer of 6 layers trained as model
# parallelism (schedule "sequential") and as a 1F1B pipeline with 6 microbatches on 1, 2 and 3 workers
# (1 worker: single()), 6 steps each; then `ddpc plot timeline` of the 3-worker 1F1B and sequential steps,
# `ddpc plot throughput` across the runs and `ddpc plot split`. Uses build/ddpc and build/ddprun.
set -eu
out=${1:?usage: tests/bench/cpu_pipeline_pictures.sh OUTDIR}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
cp schedules/lib/models.lua "$out/"
gen() { # NAME PARALLEL
  cat >"$out/$1.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny({ d_model = 64, d_ff = 256, heads = 4, vocab = 256, context = 64, layers = 6 }),
                  data = { global_batch = 12, tokens = "random", seed = 5 }, precision = "fp32",
                  optimizer = adamw { lr = 1e-3 }, parallel = $2, steps = 6, warmup = 2, seed = 3 }
LUA
  build/ddpc "$out/$1.lua" -o "$out/$1.bin" -q
  build/ddprun "$out/$1.bin" --device ref --metrics "$out/$1.jsonl" --trace "$out/$1.trace.json" --quiet
}
gen one "single()"
for w in 2 3; do
  gen "model$w" "pipeline { stages = $w, microbatches = 1, schedule = \"sequential\" }"
  gen "pipe$w" "pipeline { stages = $w, microbatches = 6, schedule = \"1f1b\" }"
done
build/ddpc plot timeline -o "$out/timeline_1f1b_3.svg" "$out"/pipe3.trace.rank*.json | tail -1
build/ddpc plot timeline -o "$out/timeline_sequential_3.svg" "$out"/model3.trace.rank*.json | tail -1
build/ddpc plot throughput -o "$out/throughput.svg" --label model --label model --label model --label pipeline \
  --label pipeline "$out/one.jsonl" "$out/model2.jsonl" "$out/model3.jsonl" "$out/pipe2.jsonl" "$out/pipe3.jsonl"
build/ddpc plot split -o "$out/split.svg" "$out/model3.jsonl" "$out/pipe3.jsonl"
rm -f "$out"/*.bin "$out"/*.lua
