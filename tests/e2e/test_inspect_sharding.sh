#!/usr/bin/env bash
# tests/e2e/test_inspect_sharding.sh: `ddpc inspect`'s "== sharding ==" and "== memory per rank ==" sections and
# their JSON ("sharding", "memory_per_rank") on compiled plans: shipped tiny (fp32, one rank), tiny_ddp (fp32
# DDP), zero1 and sharded_optimizer (XL, bf16), and a tiny bf16 ZeRO-1 schedule on 2 and 4 ranks. Checks
# the level, the formula line written out with the plan's byte widths (exact bytes for the known ones), the
# classes summing to the rank's arena bytes and equal to `ddpc explain --json`'s, the parameter and
# gradient parts, the ratio actual/formula, and for ZeRO-1 the parameter all-gather on the comm stream
# with its first compute use; tiny_zero2.lua and tiny_fsdp.lua: group gradients and (ZeRO-3) gathered
# parameters at the peak, every unit gathered for the forward, at most prefetch+1 = 2 units resident.
. "$(dirname "$0")/lib.sh"
e2e_tmp inspect_sharding

for n in 2 4; do
  cat >"$tmp/tiny_zero1_$n.lua" <<LUA
local models = require "models"
return schedule {
  model = models.tiny(), data = { global_batch = 8, tokens = "pattern", seed = 1 }, precision = "bf16",
  optimizer = adamw { lr = 3e-3, betas = { 0.9, 0.95 }, weight_decay = 0.0 },
  parallel = ddp { ranks = $n, sync = "flat", shard = "zero1" }, steps = 2, seed = 1,
}
LUA
done

# plan | level | formula line (a regular expression; "" = only the form)
cases=(
  "tiny|none|^formula: DDP \(0\+4\+12\)Ψ = 0\.002 GB \(1840128 B\)$"
  "tiny_ddp|none|^formula: DDP \(0\+4\+12\)Ψ = 0\.002 GB \(1840128 B\)$"
  "zero1|zero1|^formula: ZeRO-1 \(2\+4\+12/2\)Ψ = 23\.979 GB \(23978822400 B\)$"
  "sharded_optimizer|optimizer|^formula: ZeRO-1 \(2\+4\+12/2\)Ψ = 23\.979 GB \(23978822400 B\) \(shard=optimizer"
  "tiny_zero1_2|zero1|^formula: ZeRO-1 \(2\+4\+12/2\)Ψ = 0\.001 GB \(1380096 B\)$"
  "tiny_zero1_4|zero1|^formula: ZeRO-1 \(2\+4\+12/4\)Ψ = 0\.001 GB \(1035072 B\)$"
)
# fp32: the compute copy is the fp32 buffer the GEMMs read (4 bytes).
cases+=("tiny_zero2|zero2|^formula: ZeRO-2 \(4\+\(4\+12\)/2\)Ψ = 0\.001 GB \(1380096 B\)$"
  "tiny_fsdp|zero3|^formula: ZeRO-3 \(4\+4\+12\)Ψ/2 = 0\.001 GB \(1150080 B\)$")
for c in "${cases[@]}"; do
  IFS='|' read -r s level line <<<"$c"
  src="$DDP_SOURCE_DIR/schedules/$s.lua"
  [ -f "$src" ] || src="$tmp/$s.lua"
  "$DDPC" "$src" -o "$tmp/$s.bin" -q || { fail "$s does not compile"; continue; }
  "$DDPC" inspect "$tmp/$s.bin" >"$tmp/$s.txt" || { fail "inspect $s"; continue; }
  "$DDPC" inspect --json "$tmp/$s.bin" >"$tmp/$s.json" || { fail "inspect --json $s"; continue; }
  "$DDPC" explain --json "$tmp/$s.bin" >"$tmp/$s.explain.json" || { fail "explain --json $s"; continue; }
  sed -n '/^== sharding ==$/,/^$/p' "$tmp/$s.txt" >"$tmp/$s.sharding"
  sed -n '/^== memory per rank ==$/,/^$/p' "$tmp/$s.txt" >"$tmp/$s.memory"
  if [ "$level" = none ]; then
    grep -q "^none (unsharded; parallel: " "$tmp/$s.sharding" || fail "$s: sharding is not 'none': $(cat "$tmp/$s.sharding")"
  else
    grep -q "^level $level (from meta.parallel; " "$tmp/$s.sharding" || fail "$s: no 'level $level' line"
  fi
  grep -qE "$line" "$tmp/$s.memory" || fail "$s: no formula line '$line' in: $(grep formula "$tmp/$s.memory")"
  grep -qE "^ rank  parameters  gradients  optimizer  activations .* actual/formula$" "$tmp/$s.memory" ||
    fail "$s: no memory per rank table"
  python3 - "$tmp/$s.json" "$tmp/$s.explain.json" "$level" "$tmp/$s.memory" <<'PY' || fail "$s: JSON content"
import json, re, sys
d, e, level, text = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], open(sys.argv[4]).read().split("parameters and gradients by")[0]
sh, mem, meta = d["sharding"], d["memory_per_rank"], d["meta"]
assert sh["level"] == level, (sh["level"], level)
f = mem["formula"]
n, psi = meta["world"], meta["n_trainable"]
assert f["world"] == n and f["psi"] == psi, f
assert f["grad_bytes"] == 4 and f["master_bytes"] == 4 and f["m_bytes"] == 4 and f["v_bytes"] == 4, f
copies = any(t["flags"] & 4 for t in d["tensors"])  # TF_PARAM_COPY: the plan keeps compute copies
assert f["compute_copy_bytes"] == ((2 if meta["act_dtype_name"] == "bf16" else 4) if copies else 0), f
c, g, k = f["compute_copy_bytes"], f["grad_bytes"], 12
want = {"none": (c + g + k) * psi, "optimizer": (c + g + k / n) * psi, "zero1": (c + g + k / n) * psi,
        "zero2": (c + (g + k) / n) * psi, "zero3": (c + g + k) * psi / n}[level]
assert abs(f["bytes"] - want) < 1e-6 * want, (f["bytes"], want)
classes = ["parameters", "gradients", "optimizer_state", "activations", "communication_buffers", "workspace", "io"]
names = ["parameters", "gradients", "optimizer state", "activations", "communication buffers", "workspace",
         "inputs and scalars"]
assert len(mem["ranks"]) == n == len(d["ranks"]) == len(e["ranks"])
rows = {int(m.group(1)): m.group(0).split() for m in re.finditer(r"^ +(\d+) +[0-9.]+ .*$", text, re.M)}
for r, ir, er in zip(mem["ranks"], d["ranks"], e["ranks"]):
    assert r["total"] == sum(r[k] for k in classes) == ir["total_bytes"], (r, ir["total_bytes"])
    for k, name in zip(classes, names):  # the same classes as `ddpc explain`
        assert r[k] == er["memory_bytes"][name], (k, r[k], er["memory_bytes"][name])
    assert r["parameters"] == r["parameters_masters"] + r["parameters_copies"] + r["parameters_gathered"], r
    assert r["gradients"] == r["gradients_persistent"] + r["gradients_groups"], r
    assert r["model_states"] == r["parameters"] + r["gradients"] + r["optimizer_state"], r
    assert abs(r["ratio"] - r["model_states"] / f["bytes"]) < 1e-12, r
    if level in ("zero2", "zero3"):  # group gradients live at the peak; gathered parameters under ZeRO-3
        assert r["gradients_groups"] > 0 and (r["parameters_gathered"] > 0) == (level == "zero3"), r
    else:
        assert r["parameters_gathered"] == 0 and r["gradients_groups"] == 0, r
    row = rows[r["rank"]]  # rank, 7 classes, total, model states, formula, ratio: GB with 3 decimals
    assert row[1] == "%.3f" % (r["parameters"] / 1e9) and row[8] == "%.3f" % (r["total"] / 1e9), (row, r)
    assert row[11] == "%.3f" % r["ratio"], (row, r["ratio"])
if level == "zero1":  # the parameter all-gather after the update, on the comm stream, used by the next cast
    assert sh["gathers"], sh
    for gth in sh["gathers"]:
        assert gth["stream"] == 1 and gth["first_compute_use"] is not None, gth
if level == "none":
    assert sh["units"] == [] and sh["gathers"] == [], sh
if level == "zero3":  # tiny_fsdp: prefetch 1, resharded after the forward: at most 2 units in each direction
    assert sh["prefetch_forward"] == 1 and sh["reshard_after_forward"] is True, sh
    assert sh["max_resident_units"] == 2 and sh["max_resident_forward"] == 2, sh
    assert len(sh["units"]) == len(d["buckets"]) and all(u["gathered"] for u in sh["units"]), sh["units"]
    fwd = [g for g in sh["gathers"] if not g["bwd"]]
    assert len(fwd) == len(sh["units"]) and all(g["phase"] == "forward" and not g["next_step"] for g in fwd), fwd
    assert "bound prefetch+1 (prefetch 1/1): forward 2 <= 2 holds" in open(sys.argv[4].replace(".memory", ".sharding")).read()
print("ok: %s: level %s, formula %s = %.0f B, ratio %.3f" % (sys.argv[1].split("/")[-1], level, f["text"], f["bytes"],
                                                             mem["ranks"][0]["ratio"]))
PY
done
# a pipeline shards nothing over data ranks (its stages' pieces had read as ZeRO-1), and a ZeRO level beside
# tensor parallelism shards over the data ranks with each tensor rank's Ψ/T: the formula matches the arenas
S="$DDP_SOURCE_DIR/schedules"
"$DDPC" "$S/tiny_pipeline.lua" -o "$tmp/pp.bin" -q && "$DDPC" "$S/tiny_tensor.lua" -o "$tmp/tz1.bin" -q --set parallel.shard=zero1 ||
  fail "the pipeline / tensor x zero1 plans"
"$DDPC" inspect "$tmp/pp.bin" >"$tmp/pp.txt" && "$DDPC" inspect "$tmp/tz1.bin" >"$tmp/tz1.txt" || fail "inspect pp / tz1"
grep -q "^formula: model split (0+4+12)Ψ/2 = " "$tmp/pp.txt" && ! grep -q "ZeRO" "$tmp/pp.txt" ||
  fail "a pipeline's formula: $(grep -m2 '^formula' "$tmp/pp.txt")"
grep -q "^formula: ZeRO-1 (4+4+12/2)Ψ with Ψ/2 a rank and N = 2 data ranks = " "$tmp/tz1.txt" ||
  fail "tensor x zero1's formula: $(grep -m2 '^formula' "$tmp/tz1.txt")"
for f in pp tz1; do
  awk '/model states/{on=1; next} on && /^ +[0-9]+ /{r=$NF; if (r < 0.95 || r > 1.05) bad=1} on && !/^ +[0-9]+ /{on=0} END{exit bad}' "$tmp/$f.txt" ||
    fail "$f: actual/formula off 1: $(grep -A3 'model states' "$tmp/$f.txt")"
done
exit $fail
