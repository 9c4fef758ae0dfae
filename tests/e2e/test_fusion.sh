#!/usr/bin/env bash
# tests/e2e/test_fusion.sh: the schedule's `fusion` field (compiler/frontend/fusion.c, compiler/model/fuse.c)
# on the reference executor:
#  - the tiny transformer (2 layers) in bf16: with fusion on (the default) every CAST of the residual
#    gradient (2 per layer) is gone into an RMSNORM_BWD_CAST and every backward ROPE (1 per layer) into
#    ATTN_BWD_DKV_ROPE + ATTN_BWD_DQ_ROPE; with fusion = false none is, with { norm_cast = false } or
#    { rope = false } only the other one is (ddpc inspect: the instructions, and the summary's
#    fused_kernels line); 3 AdamW steps fused and unfused end in byte-identical checkpoints and the same
#    losses and gradient norms: the fused reference kernels compute exactly what the unfused pairs do;
#  - fp32 keeps both pairs (no cast to fuse; the fused attention kernels are bf16 only), and the naive
#    attention path keeps RoPE's backward;
#  - 2 ranks of DDP, and of FSDP, in bf16: fused and unfused checkpoints byte-identical;
#  - a 2-stage pipeline in bf16 (4 layers): only the fusions inside one layer (ln2 -> output_proj), none
#    across a layer boundary, and byte-identical to the unfused pipeline;
#  - fusion = { attention_backward = true } (one head of 64): ATTN_BWD_FUSED + ATTN_DQ_STORE in place of
#    ATTN_BWD_DKV + ATTN_BWD_DQ, its f32 dq_acc zeroed by the prep, losses within 1e-3 of the split pair's;
#    fusion = true leaves it off; with rope the ROPE inverse runs on its own; what the kernel cannot do
#    (head dim 16, fp32, the naive attention) is refused naming the field;
#  - bad values of `fusion` are refused in one line naming the field.
. "$(dirname "$0")/lib.sh"
e2e_tmp fusion
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

# plan NAME MODEL PRECISION PARALLEL FUSION: compile $tmp/NAME.lua (FUSION: a schedule field or empty)
plan() {
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $2, data = { global_batch = 8, tokens = "random", seed = 5 }, precision = "$3",
                  optimizer = adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0 }, parallel = $4, steps = 3,
                  seed = 3 $5 }
LUA
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q || { fail "$1 does not compile"; return 1; }
  "$DDPC" inspect "$tmp/$1.bin" >"$tmp/$1.txt" || { fail "$1: ddpc inspect"; return 1; }
}
# run NAME [ddprun args]: the plan on the reference executor, checkpoint and metrics
run() {
  local n=$1
  shift
  "$DDPRUN" "$tmp/$n.bin" --device ref --checkpoint-dir "$tmp/$n.ckpt" --metrics "$tmp/$n.jsonl" --quiet "$@" ||
    { fail "$n run"; return 1; }
}
# count NAME OP: kernel instructions of op OP in NAME's programs (ddpc inspect)
count() { grep -c "  kernel          $2 " "$tmp/$1.txt"; }
# identical A B: byte-identical checkpoints (each safetensors file's tensor table and data; the metadata
# names the schedule file) and the same losses and gradient norms
identical() {
  python3 - "$(ckpt_latest "$tmp/$1.ckpt")" "$(ckpt_latest "$tmp/$2.ckpt")" "$tmp/$1.jsonl" "$tmp/$2.jsonl" \
    >"$tmp/cmp" 2>&1 <<'PY' || { fail "$1 != $2: $(tail -2 "$tmp/cmp")"; return 1; }
import json, struct, sys
def st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    head.pop("__metadata__", None)
    return head, b[8 + n:]
for f in ("model.safetensors", "optimizer.safetensors"):
    (ha, da), (hb, db) = st(sys.argv[1] + "/" + f), st(sys.argv[2] + "/" + f)
    assert ha == hb, f + ": tensor tables differ"
    assert len(da) > 0 and da == db, f + ": tensor bytes differ"
def steps(p):
    return [(d["step"], d["loss"], d["grad_norm"]) for d in map(json.loads, open(p)) if "loss" in d]
a, b = steps(sys.argv[3]), steps(sys.argv[4])
assert len(a) == 3 and a == b, (a, b)
print("losses", [x[1] for x in a])
PY
  echo "ok: $1 == $2 (checkpoint bytes; $(tail -1 "$tmp/cmp"))"
}

tiny='models.tiny()'
plan on "$tiny" bf16 "single()" ", fusion = true" && run on
plan default "$tiny" bf16 "single()" ""
plan off "$tiny" bf16 "single()" ", fusion = false" && run off
plan off_table "$tiny" bf16 "single()" ", fusion = { norm_cast = false, rope = true }"
plan no_rope "$tiny" bf16 "single()" ", fusion = { rope = false }"
# the default: norm_cast on, rope off (the fused RoPE backward was slower on the XL step)
[ -f "$tmp/default.txt" ] && { [ "$(count default RMSNORM_BWD_CAST)" = 4 ] && [ "$(count default ATTN_BWD_DQ_ROPE)" = 0 ] ||
  fail "default: $(count default RMSNORM_BWD_CAST) RMSNORM_BWD_CAST (expected 4), $(count default ATTN_BWD_DQ_ROPE) ATTN_BWD_DQ_ROPE (expected 0)"; }
if [ -f "$tmp/on.txt" ] && [ -f "$tmp/off.txt" ]; then
  [ "$(count on RMSNORM_BWD_CAST)" = 4 ] || fail "fused: $(count on RMSNORM_BWD_CAST) RMSNORM_BWD_CAST, expected 4 (2 per layer)"
  [ "$(count on RMSNORM_BWD)" = 1 ] || fail "fused: $(count on RMSNORM_BWD) RMSNORM_BWD left, expected 1 (layer 0's ln1: no cast after it)"
  [ "$(count off RMSNORM_BWD_CAST)" = 0 ] || fail "fusion = false still fuses"
  [ "$(count off_table RMSNORM_BWD_CAST)" = 0 ] || fail "fusion = { norm_cast = false } still fuses"
  [ "$(count off_table ATTN_BWD_DQ_ROPE)" = 2 ] || fail "fusion = { norm_cast = false } turned rope off"
  [ "$(count no_rope ATTN_BWD_DQ_ROPE)" = 0 ] && [ "$(count no_rope ROPE)" = 4 ] ||
    fail "fusion = { rope = false }: $(count no_rope ATTN_BWD_DQ_ROPE) fused, $(count no_rope ROPE) ROPE"
  [ "$(count no_rope RMSNORM_BWD_CAST)" = 4 ] || fail "fusion = { rope = false } turned norm_cast off"
  for op in ATTN_BWD_DKV_ROPE ATTN_BWD_DQ_ROPE; do
    [ "$(count on $op)" = 2 ] || fail "fused: $(count on $op) $op, expected 2 (1 per layer)"
    [ "$(count off $op)" = 0 ] || fail "fusion = false: $op"
  done
  [ "$(count on ROPE)" = 2 ] && [ "$(count off ROPE)" = 4 ] ||
    fail "ROPE: $(count on ROPE) fused (expected the 2 forwards), $(count off ROPE) unfused (expected 4)"
  [ $(($(count off CAST) - $(count on CAST))) = 4 ] || fail "CASTs: $(count off CAST) unfused, $(count on CAST) fused"
  grep -q "RMSNORM_BWD_CAST .*p6=layers.1.attn.output_proj.dy.bf16:bf16" "$tmp/on.txt" ||
    fail "inspect does not show layer 1's ln2 writing output_proj's bf16 dy"
  grep -qx "fused_kernels *8 (RMSNORM_BWD_CAST 4, ATTN_BWD_DKV_ROPE 2, ATTN_BWD_DQ_ROPE 2)" "$tmp/on.txt" || fail "inspect's summary: $(grep fused_ "$tmp/on.txt")"
  grep -qx "fused_kernels *0" "$tmp/off.txt" || fail "inspect's summary (unfused): $(grep fused_ "$tmp/off.txt")"
  identical on off
fi

# --set fusion=false on a schedule without the field
"$DDPC" "$tmp/on.lua" -o "$tmp/set_off.bin" -q --set fusion=false && "$DDPC" inspect "$tmp/set_off.bin" >"$tmp/set_off.txt" &&
  grep -qx "fused_kernels *0" "$tmp/set_off.txt" || fail "--set fusion=false: still fused"

# the naive attention path has no fused kernel: RoPE's backward stays (norm_cast does not depend on it)
plan naive "models.tiny({ attention = \"naive\" })" bf16 "single()" "" &&
  { [ "$(count naive ROPE)" = 4 ] && grep -qx "fused_kernels *4 (RMSNORM_BWD_CAST 4)" "$tmp/naive.txt" ||
    fail "naive attention: $(count naive ROPE) ROPE, $(grep fused_ "$tmp/naive.txt")"; }

plan f32 "$tiny" fp32 "single()" "" &&
  { grep -qx "fused_kernels *0" "$tmp/f32.txt" || fail "fp32 plan: $(grep fused_ "$tmp/f32.txt")"; }

plan ddp_on "$tiny" bf16 "ddp { ranks = 2 }" "" && run ddp_on
plan ddp_off "$tiny" bf16 "ddp { ranks = 2 }" ", fusion = false" && run ddp_off
[ -f "$tmp/ddp_on.txt" ] && { [ "$(count ddp_on RMSNORM_BWD_CAST)" -ge 4 ] || fail "ddp: not fused"; }
identical ddp_on ddp_off

plan fsdp_on "$tiny" bf16 "fsdp { ranks = 2, prefetch = 1, reshard_after_forward = true }" ", fusion = true" && run fsdp_on
plan fsdp_off "$tiny" bf16 "fsdp { ranks = 2, prefetch = 1, reshard_after_forward = true }" ", fusion = false" &&
  run fsdp_off
[ -f "$tmp/fsdp_on.txt" ] && { [ "$(count fsdp_on RMSNORM_BWD_CAST)" -ge 4 ] || fail "fsdp: not fused"; }
identical fsdp_on fsdp_off

deep='models.tiny({ layers = 4 })'
pipe='pipeline { stages = 2, microbatches = 2, schedule = "1f1b" }'
plan pipe_on "$deep" bf16 "$pipe" ", fusion = true" && run pipe_on
plan pipe_off "$deep" bf16 "$pipe" ", fusion = false" && run pipe_off
if [ -f "$tmp/pipe_on.txt" ]; then
  # per microbatch, only ln2 -> output_proj (same layer); ln1 -> w2 and ln_final -> w2 cross a layer (the
  # attention backward and RoPE are in one layer: fused)
  [ "$(count pipe_on ATTN_BWD_DQ_ROPE)" -gt 0 ] || fail "pipeline: rope not fused"
  n=$(grep "  kernel          RMSNORM_BWD_CAST " "$tmp/pipe_on.txt" | grep -vc "ln2.bwd")
  [ "$n" = 0 ] || fail "pipeline: $n fused casts across a layer boundary"
  [ "$(count pipe_on RMSNORM_BWD_CAST)" -gt 0 ] || fail "pipeline: nothing fused"
fi
identical pipe_on pipe_off

# the fused attention backward (ATTN_BWD_FUSED + ATTN_DQ_STORE), asked for by name; one head of 64, the GPU
# kernel's head dim. Its dq goes through an f32 accumulator, so the losses match the split pair's closely,
# not bit for bit (bf16 dq is rounded twice).
d64='models.tiny({ heads = 1 })'
plan ab_on "$d64" bf16 "single()" ", fusion = { attention_backward = true }" && run ab_on
plan ab_off "$d64" bf16 "single()" "" && run ab_off
plan ab_all "$d64" bf16 "single()" ", fusion = true"
plan ab_rope "$d64" bf16 "single()" ", fusion = { attention_backward = true, rope = true }"
if [ -f "$tmp/ab_on.txt" ] && [ -f "$tmp/ab_all.txt" ] && [ -f "$tmp/ab_rope.txt" ]; then
  [ "$(count ab_on ATTN_BWD_FUSED)" = 2 ] && [ "$(count ab_on ATTN_DQ_STORE)" = 2 ] && [ "$(count ab_on ATTN_BWD_DKV)" = 0 ] &&
    [ "$(count ab_on ATTN_BWD_DQ)" = 0 ] ||
    fail "attention_backward: $(count ab_on ATTN_BWD_FUSED) ATTN_BWD_FUSED, $(count ab_on ATTN_DQ_STORE) ATTN_DQ_STORE (2 each expected)"
  grep -qx "fused_kernels *6 (RMSNORM_BWD_CAST 4, ATTN_BWD_FUSED 2)" "$tmp/ab_on.txt" || fail "inspect's summary: $(grep fused_ "$tmp/ab_on.txt")"
  grep -q "ATTN_BWD_PREP .*p3=layers.1.attn.sdpa.dq_acc:f32" "$tmp/ab_on.txt" || fail "inspect: the prep does not zero layer 1's dq_acc"
  grep -q "layers.1.attn.sdpa.dq_acc  *-  *\[8,1,64,64\]  *f32 " "$tmp/ab_on.txt" || fail "inspect: dq_acc is not [8,1,64,64] f32"
  [ "$(count ab_all ATTN_BWD_FUSED)" = 0 ] || fail "fusion = true turned the fused attention backward on"
  [ "$(count ab_rope ATTN_BWD_FUSED)" = 2 ] && [ "$(count ab_rope ATTN_BWD_DQ_ROPE)" = 0 ] && [ "$(count ab_rope ROPE)" = 4 ] ||
    fail "attention_backward with rope: $(count ab_rope ATTN_BWD_FUSED) fused, $(count ab_rope ATTN_BWD_DQ_ROPE) DQ_ROPE, $(count ab_rope ROPE) ROPE"
  python3 - "$tmp/ab_on.jsonl" "$tmp/ab_off.jsonl" >"$tmp/cmp" 2>&1 <<'PY' && echo "ok: attention_backward: $(cat "$tmp/cmp")" || fail "attention_backward: $(tail -2 "$tmp/cmp")"
import json, math, sys
# grad_norm is null unless the schedule clips (then it is the norm clipped by): compared where it is there
a, b = ([tuple(v for v in (d["loss"], d["grad_norm"]) if v is not None) for d in map(json.loads, open(p)) if "loss" in d]
        for p in sys.argv[1:])
assert len(a) == len(b) == 3 and all(len(p) == len(q) for p, q in zip(a, b)), (a, b)
worst = max(max(abs(x - y) / abs(y) for x, y in zip(p, q)) for p, q in zip(a, b))
assert all(math.isfinite(x) for p in a for x in p) and worst < 1e-3, (a, b, worst)
print(f"losses and gradient norms of 3 steps within {worst:.1e} of the split backward's")
PY
fi
# what the fused kernel cannot do is refused by the schedule's field, in one line: tiny's head dim of 16,
# fp32, the naive attention
for what in "models.tiny()|bf16|head dim of 56, 64, 120 or 128 (model.d_model 64 / heads 4 = 16)" \
  "$d64|fp32|needs precision = \"bf16\"" "models.tiny({ heads = 1, attention = \"naive\" })|bf16|model.attention = \"flash\""; do
  IFS='|' read -r model prec want <<<"$what"
  cat >"$tmp/ab_bad.lua" <<LUA
local models = require "models"
return schedule { model = $model, data = { global_batch = 8, tokens = "random" }, precision = "$prec",
                  optimizer = adamw { lr = 1e-3 }, steps = 1, fusion = { attention_backward = true } }
LUA
  rm -f "$tmp/ab_bad.bin"
  if "$DDPC" "$tmp/ab_bad.lua" -o "$tmp/ab_bad.bin" -q 2>"$tmp/ab_bad.err"; then
    fail "attention_backward with $model ($prec): accepted"
  elif [ "$(wc -l <"$tmp/ab_bad.err")" != 1 ] || ! grep -qF "fusion.attention_backward" "$tmp/ab_bad.err" ||
    ! grep -qF "$want" "$tmp/ab_bad.err"; then
    fail "attention_backward with $model ($prec): $(cat "$tmp/ab_bad.err")"
  else
    echo "ok: attention_backward with $model ($prec): $(cat "$tmp/ab_bad.err")"
  fi
  [ -e "$tmp/ab_bad.bin" ] && fail "attention_backward with $model ($prec): a plan was written"
done

# bad values: one line naming the field
for bad in "fusion = 3" "fusion = { norm_cast = 1 }" "fusion = { nrom_cast = false }" "fusion = { rope = \"no\" }" \
  "fusion = { attention_backward = \"fused\" }"; do
  cat >"$tmp/bad.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny(), data = { global_batch = 8, tokens = "random" }, precision = "bf16",
                  optimizer = adamw { lr = 1e-3 }, steps = 1, $bad }
LUA
  if "$DDPC" "$tmp/bad.lua" -o "$tmp/bad.bin" -q 2>"$tmp/bad.err"; then
    fail "$bad: accepted"
  elif [ "$(wc -l <"$tmp/bad.err")" != 1 ] || ! grep -q "bad.lua:[0-9]*:.*fusion" "$tmp/bad.err"; then
    fail "$bad: $(cat "$tmp/bad.err")"
  else
    echo "ok: $bad: $(cat "$tmp/bad.err")"
  fi
  [ -e "$tmp/bad.bin" ] && fail "$bad: a plan was written"
done
exit $fail
