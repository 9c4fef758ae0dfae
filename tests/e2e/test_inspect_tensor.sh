#!/usr/bin/env bash
# tests/e2e/test_inspect_tensor.sh: `ddpc inspect`'s "== tensor parallelism ==" section and its JSON object
# "tensor_parallel" (compiler/inspect/inspect_tensor.c) on the tiny transformer of test_tensor_parallel.sh
# (d_model 128, d_ff 256, 8 heads, vocab 64, context 8, 2 layers, global batch 8): data 2 x tensor 2 (fp32,
# SGD) and tensor 4 (bf16, AdamW with clipping). Every number is worked out here from the model's sizes and
# compared exactly: the mesh and each rank's coordinates, the communicators' roles, the per-rank shapes of
# the split weights (rows for q/k/v, w1, w3 and the vocabulary, columns for output_proj and w2), the whole
# parameters and the parameter bytes per tensor rank, the collectives per layer, Megatron-LM's volume (4 x
# layers x tokens x d_model; forward f32, backward in the activation dtype), rank 0's measured volume, the
# extras (embedding output and head input gradient all-reduces, the [T, N, 2] cross-entropy statistics
# all-gather) and that measured - textbook equals them; the gradient norm's all-reduce on the tensor group
# listed apart; the sharding section saying "none" (a TP plan's pieces are not ZeRO shards); and that a
# plan without tensor parallelism has neither the section nor the JSON object.
. "$(dirname "$0")/lib.sh"
e2e_tmp inspect_tensor
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"

# name | precision | optimizer | parallel and mesh | D | T
cases=(
  'd2t2|fp32|sgd { lr = 0.1 }|parallel = ddp { ranks = 4 }, mesh = { data = 2, tensor = 2 }|2|2'
  't4|bf16|adamw { lr = 1e-2, weight_decay = 0.1, clip = 1.0, eps = 1e-6 }|parallel = ddp { ranks = 4 }, mesh = { tensor = 4 }|1|4'
  'plain|fp32|sgd { lr = 0.1 }|parallel = ddp { ranks = 4 }|4|1'
)
for c in "${cases[@]}"; do
  IFS='|' read -r name prec opt par D T <<<"$c"
  cat >"$tmp/$name.lua" <<LUA
local models = require "models"
return schedule {
  model = models.tiny({ d_model = 128, d_ff = 256, heads = 8, vocab = 64, context = 8, layers = 2 }),
  data = { global_batch = 8, tokens = "random", seed = 5 }, precision = "$prec", optimizer = $opt,
  $par, steps = 4, seed = 3,
}
LUA
  "$DDPC" "$tmp/$name.lua" -o "$tmp/$name.bin" -q || { fail "$name does not compile"; continue; }
  "$DDPC" inspect "$tmp/$name.bin" >"$tmp/$name.txt" || { fail "inspect $name"; continue; }
  "$DDPC" inspect --json "$tmp/$name.bin" >"$tmp/$name.json" || { fail "inspect --json $name"; continue; }
  if [ "$T" = 1 ]; then
    ! grep -q "tensor parallelism" "$tmp/$name.txt" || fail "$name (no tensor parallelism) prints the section"
    python3 -c 'import json, sys; sys.exit("tensor_parallel" in json.load(open(sys.argv[1])))' "$tmp/$name.json" ||
      fail "$name (no tensor parallelism) has a tensor_parallel JSON object"
    echo "ok: $name (no tensor parallelism): no section, no JSON object"
    continue
  fi
  sed -n '/^== tensor parallelism ==$/,/^$/p' "$tmp/$name.txt" >"$tmp/$name.tp"
  [ -s "$tmp/$name.tp" ] || { fail "$name: no '== tensor parallelism ==' section"; continue; }
  sed -n '/^== sharding ==$/,/^$/p' "$tmp/$name.txt" | grep -q "^none (unsharded; " ||
    fail "$name: the sharding section takes the tensor ranks' pieces for ZeRO shards"
  python3 - "$tmp/$name.tp" "$tmp/$name.json" "$D" "$T" "$prec" <<'PY' || fail "$name: the tensor parallelism section"
import json, sys
text, doc = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
D, T, prec = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
lines = [l.rstrip() for l in text.splitlines()]
bad = []
def want(line):
    if line not in lines: bad.append("no line %r" % line)
def eq(what, got, exp):
    if got == exp: return
    if isinstance(got, list) and isinstance(exp, list) and len(got) == len(exp):  # the first difference only
        k = next(k for k in range(len(got)) if got[k] != exp[k])
        bad.append("%s [%d of %d]: %r, expected %r" % (what, k, len(got), got[k], exp[k]))
    else: bad.append("%s: %r, expected %r" % (what, got, exp))

d, ff, V, L, ctx, gb = 128, 256, 64, 2, 8, 8
W = D * T
act, act_b = ("f32", 4) if prec == "fp32" else ("bf16", 2)
N = gb // D * ctx                      # tokens per rank per step
# 1. the mesh and the communicators
want("mesh: data %d x tensor %d = %d ranks (rank = data x tensor + tensor rank)" % (D, T, W))
for r in range(W): want("  rank %d: data %d, tensor %d" % (r, r // T, r % T))
comms = []   # one replica: no communicator but the world's (comm 0), which is the tensor group
for dd in range(D if D > 1 else 0): comms.append((list(range(dd * T, dd * T + T)), "tensor group of replica %d" % dd))
for t in range(T if D > 1 else 0): comms.append(([dd * T + t for dd in range(D)], "data group of tensor rank %d" % t))
for k, (m, role) in enumerate(comms): want("  comm %d: ranks %s (%s)" % (k + 1, " ".join(map(str, m)), role))
want("communicators (comm 0: every rank%s):" % (", the tensor group: no other" if D == 1 else ""))
tcomm = "1" if D > 1 else "0"   # rank 0's tensor group
# 2. per-rank shapes
def split_line(n, whole, cols, kind):
    cells = []
    for t in range(T):
        if cols:
            w = whole[1] // T
            cells.append("[%d,%d] cols %d-%d" % (whole[0], w, t * w, t * w + w - 1))
        else:
            h = whole[0] // T
            cells.append("[%d,%d] rows %d-%d" % (h, whole[1], t * h, t * h + h - 1))
    return n, "[%d,%d]" % whole, "%s (%s)" % ("columns" if cols else "rows", kind), cells
splits = [split_line("token_embeddings.weight", (V, d), False, "vocabulary")]
for l in range(L):
    p = "layers.%d." % l
    splits += [split_line(p + "attn.%s_proj.weight" % x, (d, d), False, "column-parallel") for x in "qkv"]
    splits += [split_line(p + "attn.output_proj.weight", (d, d), True, "row-parallel"),
               split_line(p + "ffn.w1.weight", (ff, d), False, "column-parallel"),
               split_line(p + "ffn.w2.weight", (d, ff), True, "row-parallel"),
               split_line(p + "ffn.w3.weight", (ff, d), False, "column-parallel")]
splits.append(split_line("lm_head.weight", (V, d), False, "vocabulary"))
rows = {l.split()[0]: l.split() for l in lines if l.startswith("  ") and len(l.split()) > 3}
for n, whole, split, cells in splits:
    got = rows.get(n)
    exp = [n, whole] + split.split() + " ".join(cells).split()
    if got != exp: bad.append("split row %s: %r, expected %r" % (n, got, exp))
want("split parameters (state dict: whole shape, and each tensor rank's piece; world rank r holds tensor rank r %% %d's): %d"
     % (T, len(splits)))
split_el = 2 * V * d + L * (4 * d * d + 3 * d * ff)
whole_n, whole_b = 2 * L + 1, (2 * L + 1) * d * 4
want("whole parameters (replicated on every rank): %d, %d bytes per rank" % (whole_n, whole_b))
one = (split_el + (2 * L + 1) * d) * 4
want("parameter bytes per rank (f32 masters; split pieces + whole), one rank unsplit: %d" % one)
per = split_el * 4 // T + whole_b
for t in range(T):
    want("  tensor rank %d (ranks %s): %d bytes = %.4f of one rank's" % (t, " ".join(str(dd * T + t) for dd in range(D)), per, per / one))
# 3. collectives per layer
nd = N * d
ag = T * N * 2
ex = [("forward", "token_embeddings.all_reduce", "all_reduce", nd, nd, "f32"),
      ("forward", "cross_entropy.all_gather", "all_gather", N * 2, ag, "f32"),
      ("backward", "ln_final.tp_copy.bwd", "all_reduce", nd, nd, act)]
blk = {l: [("forward", "layers.%d.attn.output_proj.all_reduce" % l, "all_reduce", nd, nd, "f32"),
           ("forward", "layers.%d.ffn.w2.all_reduce" % l, "all_reduce", nd, nd, "f32"),
           ("backward", "layers.%d.ln2.tp_copy.bwd" % l, "all_reduce", nd, nd, act),
           ("backward", "layers.%d.ln1.tp_copy.bwd" % l, "all_reduce", nd, nd, act)] for l in range(L)}
size = {"f32": 4, "bf16": 2}
nbytes = lambda cs: sum(c[4] * size[c[5]] for c in cs)
want(" outside the blocks (embedding, head, loss): 3, %d bytes" % nbytes(ex))
for l in range(L): want(" layer %d: 4, %d bytes" % (l, nbytes(blk[l])))
listed = [l.split()[1:] for l in lines if len(l.split()) == 9 and l.split()[0].isdigit()]
exp = [[c[0], c[1], c[2], str(c[3]), str(c[4]), c[5], str(c[4] * size[c[5]]), tcomm] for c in ex + sum(blk.values(), [])]
timed = [x for x in listed if x[1] != "grad_norm.all_reduce.tensor"]
eq("collectives (phase, name, opcode, count, elements, dtype, bytes, comm)", timed, exp)
if prec == "bf16":   # AdamW with clipping: the norm's partial sums all-reduced over the tensor group, not a layer's
    if not any(x[:3] == ["optimizer", "grad_norm.all_reduce.tensor", "all_reduce"] for x in listed):
        bad.append("no grad_norm.all_reduce.tensor among the other tensor-group collectives")
    want(" also on the tensor groups, outside the TP_COMM timers (not a layer's):")
# 4. the volume: textbook, measured, extras
tb_f, tb_b = 2 * L * nd, 2 * L * nd
tb_fb, tb_bb = tb_f * 4, tb_b * act_b
ex_el, ex_b = sum(c[4] for c in ex), nbytes(ex)
ar_el = (4 * L + 2) * nd
ar_b = (2 * L + 1) * nd * 4 + (2 * L + 1) * nd * act_b
ms_el, ms_b = ar_el + ag, ar_b + ag * 4
want("textbook (Megatron-LM): per block 2 all-reduces of tokens x d_model forward and 2 backward: 4 x %d layers x %d tokens per rank (%d sequences x %d) x d_model %d = %d elements"
     % (L, N, gb // D, ctx, d, 4 * L * N * d))
want("  forward:  %d elements x 4 B (f32, the residual stream) = %d bytes" % (tb_f, tb_fb))
want("  backward: %d elements x %d B (%s, the activation dtype's gradients) = %d bytes" % (tb_b, act_b, act, tb_bb))
want("  textbook total: %d elements, %d bytes" % (tb_f + tb_b, tb_fb + tb_bb))
want("measured (rank 0): %d elements, %d bytes (%d all-reduces, 1 all-gathers); in the blocks %d elements, %d bytes"
     % (ms_el, ms_b, 4 * L + 2, tb_f + tb_b, tb_fb + tb_bb))
want("  forward   token_embeddings.all_reduce, the embedding's output (vocabulary-parallel lookup): %d elements f32 = %d bytes" % (nd, nd * 4))
want("  forward   cross_entropy.all_gather, the vocabulary-parallel cross-entropy's statistics [T, N, 2]: %d elements f32 = %d bytes" % (ag, ag * 4))
want("  backward  ln_final.tp_copy.bwd, the LM head input's gradient (column-parallel head): %d elements %s = %d bytes" % (nd, act, nd * act_b))
want("  extras total: %d elements, %d bytes" % (ex_el, ex_b))
eq("measured - textbook (elements)", ms_el - (tb_f + tb_b), ex_el)
eq("measured - textbook (bytes)", ms_b - (tb_fb + tb_bb), ex_b)
want("measured - textbook = %d elements, %d bytes: equals the extras (reconciles)" % (ex_el, ex_b))
for r in range(W):
    want("  %5d %11d %14d %14d %11d %14d %14d %14d" % (r, 4 * L + 2, ar_el, ar_b, 1, ag, ag * 4, ms_b))

# 5. the JSON object: the same numbers
tp = doc.get("tensor_parallel")
if not isinstance(tp, dict):
    bad.append("no tensor_parallel JSON object")
else:
    eq("json tensor/data/world", (tp["tensor"], tp["data"], tp["world"]), (T, D, W))
    eq("json ranks", [(x["rank"], x["data"], x["tensor"]) for x in tp["ranks"]], [(r, r // T, r % T) for r in range(W)])
    jc = [(x["comm"], x["ranks"], x["role"], x.get("replica", x.get("tensor_rank"))) for x in tp["comms"]]
    ec = [(k + 1, m, "tensor" if "tensor group" in role else "data", int(role.split()[-1])) for k, (m, role) in enumerate(comms)]
    if D == 1: ec = [(0, list(range(W)), "tensor", 0)]
    eq("json comms", jc, ec)
    js = {x["name"]: x for x in tp["splits"]}
    eq("json split names", sorted(js), sorted(s[0] for s in splits))
    w2 = js.get("layers.0.ffn.w2.weight", {})
    eq("json w2", (w2.get("shape"), w2.get("split"), w2.get("kind"), [p["shape"] for p in w2.get("pieces", [])]),
       ([d, ff], "columns", "row-parallel", [[d, ff // T]] * T))
    eq("json w2 runs/stride/first", [(p["runs"], p["stride"], p["first"]) for p in w2.get("pieces", [])],
       [(d, ff, t * ff // T) for t in range(T)])
    w1 = js.get("layers.1.ffn.w1.weight", {})
    eq("json w1", (w1.get("split"), w1.get("kind"), [p["shape"] for p in w1.get("pieces", [])]),
       ("rows", "column-parallel", [[ff // T, d]] * T))
    eq("json embedding", [p["shape"] for p in js.get("token_embeddings.weight", {}).get("pieces", [])], [[V // T, d]] * T)
    eq("json whole", (tp["whole_params"], tp["whole_param_bytes"]), (whole_n, whole_b))
    eq("json param bytes", (tp["param_bytes_per_tensor_rank"], tp["param_bytes_one_rank"]), ([per] * T, one))
    jcol = [[x["phase"], x["name"], x["opcode"], str(x["count"]), str(x["elements"]), x["dtype"], str(x["bytes"]), str(x["comm"])]
            for x in tp["collectives"]]
    eq("json collectives", sorted(jcol), sorted(exp))
    eq("json layers", sorted((x["name"], x["layer"]) for x in tp["collectives"]),
       sorted([(c[1], -1) for c in ex] + [(c[1], l) for l in range(L) for c in blk[l]]))
    eq("json other collectives", [x["name"] for x in tp["other_tensor_collectives"]],
       ["grad_norm.all_reduce.tensor"] if prec == "bf16" else [])
    v = tp["volume"]
    eq("json textbook", v["textbook"], {"layers": L, "tokens_per_rank": N, "d_model": d, "forward_elements": tb_f,
       "backward_elements": tb_b, "elements": tb_f + tb_b, "forward_dtype": "f32", "backward_dtype": act,
       "forward_bytes": tb_fb, "backward_bytes": tb_bb, "bytes": tb_fb + tb_bb})
    eq("json measured", v["measured"], {"rank": 0, "elements": ms_el, "bytes": ms_b, "block_elements": tb_f + tb_b,
       "block_bytes": tb_fb + tb_bb})
    eq("json extras", sorted((x["name"], x["elements"], x["bytes"]) for x in v["extras"]),
       sorted((c[1], c[4], c[4] * size[c[5]]) for c in ex))
    eq("json extras/difference", (v["extras_elements"], v["extras_bytes"], v["difference_elements"], v["difference_bytes"],
       v["reconciles"]), (ex_el, ex_b, ex_el, ex_b, True))
    for x in v["ranks"]:
        eq("json volume rank %d" % x["rank"], (x["all_reduces"], x["all_reduce_elements"], x["all_reduce_bytes"],
           x["all_gathers"], x["all_gather_elements"], x["all_gather_sent_elements"], x["all_gather_bytes"],
           x["elements"], x["bytes"]), (4 * L + 2, ar_el, ar_b, 1, ag, N * 2, ag * 4, ms_el, ms_b))
    eq("json volume ranks", len(v["ranks"]), W)
for b in bad: print("FAIL:", b)
if not bad: print("ok: D %d x T %d (%s): tensor section and JSON, textbook %d + extras %d = measured %d bytes" % (D, T, prec, tb_fb + tb_bb, ex_b, ms_b))
sys.exit(1 if bad else 0)
PY
done
exit $fail
