#!/usr/bin/env bash
# tests/e2e/test_pipeline_schedules.sh: pipeline{} through ddpc. Each bad pipeline schedule of
# tests/fixtures/schedules_bad/pipe_*.lua (more stages or chunks than layers, microbatches that do not
# divide the batch, splits with the wrong count, an empty chunk, a layer left out or too many, split
# functions that fail or return no list, unknown fields, wrong types, ranks that are not stages x replicas,
# virtual stages and schedules that do not go together) is refused with its exact one line, exit status 1
# and no plan; the plan summary's parallel line of the shipped pipeline schedules shows the pipeline
# (stages, replicas, microbatches, schedule, virtual stages, split), also after --set.
. "$(dirname "$0")/lib.sh"
e2e_tmp pipeline
bad="$DDP_SOURCE_DIR/tests/fixtures/schedules_bad"
# refused NAME LINE: ddpc on $bad/NAME.lua prints exactly "$bad/NAME.lua:LINE" on stderr and exits 1.
refused() {
  local name=$1 want="$bad/$1.lua:$2" rc=0
  "$DDPC" "$bad/$name.lua" -o "$tmp/$name.bin" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc = 1 ] || { fail "$name: exit status $rc, want 1"; return; }
  local got; got=$(cat "$tmp/err")
  [ "$got" = "$want" ] || { fail "$name: got '$got', want '$want'"; return; }
  if ls "$tmp/$name.bin"* >/dev/null 2>&1; then fail "$name: left $(ls "$tmp/$name.bin"*)"; return; fi
  echo "ok: $name: $got"
}
refused pipe_stages_layers "6: parallel.stages = 5 is more than the model's 4 layers"
refused pipe_chunks_layers "6: parallel.virtual_stages = 3 gives 6 chunks (stages x virtual_stages), more than the model's 4 layers"
refused pipe_microbatches "6: parallel.microbatches = 3 does not divide the replica's batch of 8 sequences"
refused pipe_batch_replicas "2: data.global_batch must be divisible by parallel.replicas (2), got 9"
refused pipe_replica_microbatches "6: parallel.microbatches = 8 does not divide the replica's batch of 4 sequences (data.global_batch 8 / replicas 2)"
refused pipe_split_count "6: parallel.split has 3 entries, but the pipeline has 4 chunks (stages 4 x virtual_stages 1): give the layers of each chunk"
refused pipe_split_zero "6: parallel.split[2] must be a positive integer (the layers of chunk 1), got 0"
refused pipe_split_short "6: parallel.split leaves layer 7 out (it holds 7 of the model's 8 layers)"
refused pipe_split_short2 "6: parallel.split leaves layers 6 to 7 out (it holds 6 of the model's 8 layers)"
refused pipe_split_long "6: parallel.split has 9 layers, the model 8"
refused pipe_split_float "6: parallel.split[1] must be a positive integer (the layers of chunk 0), got 4.5"
refused pipe_split_mlp "6: parallel.split leaves model.layers[5] out (it holds 4 of the model's 5 layers)"
refused pipe_split_error "2: parallel.split failed: no split for 8 layers"
refused pipe_split_notlist "7: parallel.split(info) must be a list of positive integers (the layers of each chunk), got 4"
refused pipe_split_fn_sum "7: parallel.split(info) leaves layers 5 to 7 out (it holds 5 of the model's 8 layers)"
refused pipe_split_type "6: parallel.split must be a list of positive integers (the layers of each chunk) or a function(info) returning one, got \"even\""
refused pipe_unknown "6: parallel.microbatch is not a field of pipeline{} (did you mean microbatches?)"
refused pipe_stages_type "6: parallel.stages must be a positive integer, got \"4\""
refused pipe_no_stages "6: parallel.stages is required"
refused pipe_schedule_name "6: parallel.schedule must be one of \"sequential\", \"gpipe\", \"1f1b\", \"interleaved\" or \"zero_bubble\", got \"pipedream\""
refused pipe_ranks "6: parallel.ranks must equal stages x replicas (2 x 2 = 4): a pipeline's ranks follow from them, got 2"
refused pipe_interleaved_v1 "6: parallel.virtual_stages must be at least 2 with schedule = \"interleaved\" (the chunks each stage runs), got 1"
refused pipe_interleaved_mb "6: parallel.microbatches must be a multiple of parallel.stages (4) with schedule = \"interleaved\" (Megatron's rule), got 2"
refused pipe_virtual_1f1b "6: parallel.virtual_stages must be 1 with schedule = \"1f1b\" (only \"interleaved\" runs several chunks per stage), got 2"
refused pipe_sequential_mb "6: parallel.microbatches must be 1 with schedule = \"sequential\" (the whole batch goes through the stages at once, each stage waiting for the previous), got 4"
refused pipe_microbatches_huge "6: parallel.microbatches must be at most 4096, got 1048576"

# A bad --set on a shipped pipeline schedule: one line naming the --set, exit 1, no plan.
rc=0
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_pipeline.lua" --set parallel.microbatches=3 -o "$tmp/set.bin" 2>"$tmp/err" || rc=$?
want="--set parallel.microbatches=3: parallel.microbatches = 3 does not divide the replica's batch of 8 sequences"
if [ $rc != 1 ] || [ "$(cat "$tmp/err")" != "$want" ] || [ -e "$tmp/set.bin" ]; then
  fail "--set parallel.microbatches=3: exit $rc, '$(cat "$tmp/err")', want '$want'"
else
  echo "ok: $want"
fi

# summary: the parallel line of `ddpc inspect`
summary() { # SCHEDULE EXPECTED_PARALLEL_LINE [--set ...]
  local s=$1 want=$2; shift 2
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$s.lua" -o "$tmp/$s.bin" -q "$@" 2>"$tmp/$s.err" ||
    { fail "$s does not compile: $(cat "$tmp/$s.err")"; return; }
  local got; got=$("$DDPC" inspect "$tmp/$s.bin" | sed -n 's/^parallel  *//p')
  [ "$got" = "$want" ] || { fail "$s $*: parallel '$got', want '$want'"; return; }
  echo "ok: $s $*: $got"
}
summary tiny_pipeline "pipeline stages=2 replicas=1 microbatches=4 schedule=1f1b"
summary tiny_pipeline "pipeline stages=2 replicas=1 microbatches=8 schedule=gpipe" \
  --set parallel.microbatches=8 --set parallel.schedule=gpipe
# pipelines with data-parallel replicas compile (test_pipeline_replicas.sh runs them)
summary tiny_pipeline "pipeline stages=2 replicas=2 microbatches=2 schedule=1f1b" --set parallel.replicas=2 \
  --set parallel.microbatches=2
summary tiny_pipeline "pipeline stages=2 replicas=1 microbatches=4 schedule=zero_bubble" --set parallel.schedule=zero_bubble
summary toy_pipeline "pipeline stages=3 replicas=1 microbatches=4 schedule=1f1b split=4,4,1"
summary toy_pipeline "pipeline stages=2 replicas=1 microbatches=4 schedule=interleaved virtual=2 split=4,2,2,1" \
  --set parallel.stages=2 --set parallel.schedule=interleaved --set parallel.virtual_stages=2
summary toy_pipeline "pipeline stages=2 replicas=1 microbatches=1 schedule=sequential split=6,3" \
  --set parallel.stages=2 --set parallel.schedule=sequential --set parallel.microbatches=nil
summary toy_pipeline "single rank" --set parallel=nil
# inspect's bubble is the schedule's own formula (as plot timeline's): zero bubble (ZB-H1, equal F, B, W),
# not 1F1B's: 2 stages, 4 microbatches: 1/13; sequential (1 microbatch in flight): 1/2
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_pipeline.lua" -o "$tmp/zb.bin" -q --set parallel.schedule=zero_bubble &&
  "$DDPC" inspect "$tmp/zb.bin" | grep -qx 'bubble (the schedule.s formula (p-1)/(3m+p-1) (ZB-H1 with equal F, B, W times)): 0.0769' ||
  fail "inspect's zero-bubble bubble: $("$DDPC" inspect "$tmp/zb.bin" | grep '^bubble')"
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_pipeline.lua" -o "$tmp/seq.bin" -q --set parallel.stages=2 \
  --set parallel.schedule=sequential --set parallel.microbatches=nil &&
  "$DDPC" inspect "$tmp/seq.bin" | grep -qx 'bubble (the schedule.s formula (p-1)/p): 0.5000' ||
  fail "inspect's sequential bubble: $("$DDPC" inspect "$tmp/seq.bin" | grep '^bubble')"
exit $fail
