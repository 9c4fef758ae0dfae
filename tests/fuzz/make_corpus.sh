#!/usr/bin/env bash
# tests/fuzz/make_corpus.sh OUT: the seed corpus of the fuzz targets, generated from what ships, into
# OUT/<target>/: plan (every shipped schedule that compiles, by ddpc on a tiny model, and the tiny model with
# the fused attention backward, each stripped of CUBIN by strip_plan),
# schedule (schedules/*.lua as they are), safetensors (the checkpoint ddprun writes for toy.lua on the
# reference executor: model and optimizer), tokens (a few token files behind fuzz_tokens' 4 shape bytes),
# profile (docs/profiles/*.json: the built-in default as a file and a calibrated 2 x H200 profile).
# Needs $DDPC, $DDPRUN, $STRIP_PLAN (defaults: build/ddpc, build/ddprun, build/tests/strip_plan). Existing
# files are kept (delete OUT to start over).
set -euo pipefail
src=${DDP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${1:?usage: make_corpus.sh OUT}
DDPC=${DDPC:-$src/build/ddpc}
DDPRUN=${DDPRUN:-$src/build/ddprun}
STRIP_PLAN=${STRIP_PLAN:-$src/build/tests/strip_plan}
mkdir -p "$out"/{plan,schedule,safetensors,tokens,profile}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ddp-corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cp "$src"/schedules/*.lua "$out/schedule/"
cp "$src"/docs/profiles/*.json "$out/profile/"

nplans=0
for s in "$src"/schedules/*.lua; do
  n=$(basename "$s" .lua)
  [ -s "$out/plan/$n.bin" ] && { nplans=$((nplans + 1)); continue; }
  # models.lua and xl_ddp.lua are modules/templates, not schedules: ddpc refuses them, which is fine here.
  # Every transformer layout on a tiny model (the plan target runs accepted plans on the reference
  # executor, and a seed's step should take milliseconds there): 2 layers (each stage of the 2-stage
  # pipelines needs one; interleaved ones need 4), d_model 32, context 8, vocabulary 64. Schedules whose
  # model has no such fields (the toy MLPs) compile as they ship.
  tiny=(--set model.d_model=32 --set model.d_ff=64 --set model.heads=2 --set model.context=8 --set model.vocab=64)
  if "$DDPC" "$s" -o "$tmp/$n.bin" --quiet --set model.layers=2 "${tiny[@]}" 2>/dev/null ||
    "$DDPC" "$s" -o "$tmp/$n.bin" --quiet --set model.layers=4 "${tiny[@]}" 2>/dev/null ||
    "$DDPC" "$s" -o "$tmp/$n.bin" --quiet 2>/dev/null; then
    "$STRIP_PLAN" "$tmp/$n.bin" "$out/plan/$n.bin"
    nplans=$((nplans + 1))
  fi
done
# the fused attention backward (ATTN_BWD_FUSED, ATTN_DQ_STORE and the prep's dq accumulator) needs a head dim
# of 64 and bf16, which no shipped schedule asks for
if [ ! -s "$out/plan/tiny_fused_attn_bwd.bin" ] &&
  "$DDPC" "$src/schedules/tiny.lua" -o "$tmp/tiny_fused_attn_bwd.bin" --quiet --set precision=bf16 --set model.heads=1 \
    --set fusion.attention_backward=true 2>/dev/null; then
  "$STRIP_PLAN" "$tmp/tiny_fused_attn_bwd.bin" "$out/plan/tiny_fused_attn_bwd.bin"
  nplans=$((nplans + 1))
fi
# the update streams' priorities (meta low_priority_streams) with update_tail's second side stream: a single
# rank without clipping, so that its optimizer overlaps the backward
if [ ! -s "$out/plan/tiny_update_tail.bin" ] &&
  "$DDPC" "$src/schedules/tiny.lua" -o "$tmp/tiny_update_tail.bin" --quiet --set optimizer.clip=nil \
    --set streams.update_priority=low --set streams.update_tail=0.5 2>/dev/null; then
  "$STRIP_PLAN" "$tmp/tiny_update_tail.bin" "$out/plan/tiny_update_tail.bin"
  nplans=$((nplans + 1))
fi
[ "$nplans" -gt 0 ] || { echo "make_corpus.sh: no schedule compiled (is $DDPC built?)" >&2; exit 1; }

if [ ! -s "$out/safetensors/model.safetensors" ]; then
  "$DDPC" "$src/schedules/toy.lua" -o "$tmp/toy.bin" --quiet
  "$DDPRUN" "$tmp/toy.bin" --device ref --steps 2 --checkpoint-dir "$tmp/ck" --quiet >/dev/null
  ck="$tmp/ck/$(cat "$tmp/ck/latest")" # the newest checkpoint folder (runtime/io/checkpoint.h)
  cp "$ck/model.safetensors" "$out/safetensors/model.safetensors"
  cp "$ck/optimizer.safetensors" "$out/safetensors/optimizer.safetensors"
fi

# Token seeds: 4 shape bytes (vocab index | dtype << 3, context - 1, rows - 1, world - 1), then uint16 tokens.
printf '\x04\x07\x01\x01' >"$out/tokens/small_vocab256"
head -c 512 /dev/urandom >>"$out/tokens/small_vocab256"
printf '\x0f\x1f\x03\x03' >"$out/tokens/wide_u16"
for i in $(seq 0 99); do printf "\\x$(printf %02x $((i % 256)))\\x00"; done >>"$out/tokens/wide_u16"
printf '\x03\x00\x00\x00\x01\x00\x02\x00' >"$out/tokens/exact_window"
echo "make_corpus.sh: $nplans plans, $(ls "$out/schedule" | wc -l) schedules, $(ls "$out/safetensors" | wc -l) safetensors, $(ls "$out/tokens" | wc -l) token files, $(ls "$out/profile" | wc -l) profiles in $out"
