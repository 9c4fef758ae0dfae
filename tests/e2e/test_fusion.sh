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

# bad values: one line naming the field
for bad in "fusion = 3" "fusion = { norm_cast = 1 }" "fusion = { nrom_cast = false }" "fusion = { rope = \"no\" }"; do
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
