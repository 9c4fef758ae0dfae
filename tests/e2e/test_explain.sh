#!/usr/bin/env bash
# tests/e2e/test_explain.sh: `ddpc explain` on compiled shipped plans (tiny, toy_ddp, bucketed_10mb, zero1):
# every section for every rank, the default profile said to be the default, the memory classes summing to
# the rank's arena bytes as `ddpc inspect --json` gives them, the power model's lines and fields (on by
# default, off with a profile's power.limit_w 0), --json, --rank, a --profile file (good and bad), the note on moved collectives, and the
# command line's refusals (exit 2) and failures (exit 1, one line).
. "$(dirname "$0")/lib.sh"
e2e_tmp explain

for s in tiny toy_ddp bucketed_10mb zero1; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$s.lua" -o "$tmp/$s.bin" -q || { fail "$s does not compile"; continue; }
  "$DDPC" explain "$tmp/$s.bin" >"$tmp/$s.txt" 2>"$tmp/$s.err" || { fail "explain $s: $(cat "$tmp/$s.err")"; continue; }
  "$DDPC" inspect --json "$tmp/$s.bin" >"$tmp/$s.json" || fail "inspect --json $s"
  world=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ranks"]))' "$tmp/$s.json")
  grep -q "^== explain ==$" "$tmp/$s.txt" || fail "$s: no header"
  grep -q "^profile: built-in H100/H200 default (uncalibrated); no --profile given" "$tmp/$s.txt" ||
    fail "$s: does not say it used the default profile"
  for ((r = 0; r < world; r++)); do
    # the rank's section, up to the blank line that ends it
    sed -n "/^== rank $r ==\$/,/^\$/p" "$tmp/$s.txt" >"$tmp/$s.r$r"
    for want in "predicted step time" "^compute " "^comm " "exposed communication" "overlap ratio" \
      "^phases \(timers, as ddprun's metrics\): forward [0-9.]+ ms, backward [0-9.]+ ms, optimizer [0-9.]+ ms$" \
      "critical path: [0-9]+ instructions" "memory at the peak:" \
      "^energy above idle +[0-9.]+ J: compute [0-9.]+ \([0-9.]+ TFLOP(, [0-9.]+ of them fp32)?\), memory [0-9.]+ \([0-9.]+ GB\), links [0-9.]+" \
      "^mean power at that step +[0-9]+ W" "^power floor +[0-9.]+ ms"; do
      grep -qE "$want" "$tmp/$s.r$r" || fail "$s rank $r: no '$want'"
    done
    step=$(awk '/^predicted step time/ { print $4 }' "$tmp/$s.r$r")
    awk -v t="$step" 'BEGIN { exit !(t > 0) }' || fail "$s rank $r: step time '$step' is not positive"
    # classes (7 lines between "memory at the peak:" and "total") sum to the total and to inspect's bytes
    sum=$(sed -n '/^memory at the peak:/,/^  total/p' "$tmp/$s.r$r" | grep -v -e "^memory" -e "^  total" |
      awk '{ for (i = 1; i <= NF; i++) if ($(i + 1) == "B") { s += $i; n++ } } END { printf "%.0f %d", s, n }')
    total=$(awk '$1 == "total" && $3 == "B" { print $2 }' "$tmp/$s.r$r")
    arenas=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][int(sys.argv[2])]["total_bytes"])' \
      "$tmp/$s.json" "$r")
    [ "$sum" = "$arenas 7" ] || fail "$s rank $r: classes sum/count '$sum', arenas $arenas"
    [ "$total" = "$arenas" ] || fail "$s rank $r: total $total, arenas $arenas"
    echo "ok: $s rank $r: step $step ms, memory $total B in 7 classes"
  done
  if [ "$world" = 1 ]; then
    grep -q "overlap ratio .*n/a (no communication)" "$tmp/$s.txt" || fail "$s: one rank, yet an overlap ratio"
  else
    grep -qE "^overlap ratio +[-0-9.]+$" "$tmp/$s.txt" || fail "$s: $world ranks, no overlap ratio"
    grep -qE "^communication +[0-9.]*[1-9][0-9.]* ms" "$tmp/$s.txt" || fail "$s: $world ranks, no communication time"
  fi
done

# moved collectives (nccl.movement = "peer_copy") are priced as NCCL's copy-engine ones, and the report says so
# (a note line, "note" in --json): the same prediction as the plan on NCCL's copy-engine path (symmetric windows,
# the zero-CTA policy), which has no note
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_ddp.lua" -o "$tmp/moved.bin" -q --set nccl.all_reduce=alltoall \
  --set nccl.movement=peer_copy || fail "tiny_ddp with movement does not compile"
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_ddp.lua" -o "$tmp/a2a.bin" -q --set nccl.all_reduce=alltoall \
  --set nccl.register=window --set nccl.cta_policy=zero || fail "tiny_ddp on windows does not compile"
"$DDPC" explain "$tmp/moved.bin" >"$tmp/moved.txt" || fail "explain moved"
"$DDPC" explain "$tmp/a2a.bin" >"$tmp/a2a.txt" || fail "explain a2a"
grep -qE '^note: .*nccl.movement = "peer_copy".* priced as NCCL' "$tmp/moved.txt" || fail "movement: no note"
grep -q '^note:' "$tmp/a2a.txt" && fail "no movement, yet a note"
cmp -s <(grep -v '^note:' "$tmp/moved.txt") "$tmp/a2a.txt" || fail "movement changed the prediction"
"$DDPC" explain --json "$tmp/moved.bin" | python3 -c 'import json,sys; assert "peer_copy" in json.load(sys.stdin)["note"]' ||
  fail "movement: no note in --json"
"$DDPC" explain --json "$tmp/a2a.bin" | python3 -c 'import json,sys; assert "note" not in json.load(sys.stdin)' ||
  fail "no movement, yet a note in --json"
echo "ok: moved collectives: priced as NCCL's copy-engine path, with a note"
# a repeated --profile or --compare is refused (which one would count?); a profile's name is printed without
# its control characters
for opt in --profile --compare; do
  if "$DDPC" explain "$tmp/tiny.bin" $opt "$tmp/a" $opt "$tmp/b" >/dev/null 2>"$tmp/err"; then fail "$opt twice: accepted"
  elif [ $? = 2 ] && grep -qx "ddpc explain: $opt given twice" "$tmp/err"; then echo "ok: $opt twice refused"
  else fail "$opt twice: $(cat "$tmp/err")"; fi
done
python3 - "$tmp/esc_prof.json" <<'PY'
import json, sys
json.dump({"name": "lab\u001b[31m\nx", "launch_us": 5, "hbm_gbps": 3000, "gemm_tflops_16": 600, "gemm_tflops_32": 40,
           "gemm_small_dim": 256, "gemm_small_scale": 0.5, "attention_tflops": 100, "collective_share": 0.2,
           "collectives": {k: {"alpha_us": 10, "busbw_gbps": 200} for k in
                           ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv")}},
          open(sys.argv[1], "w"))
PY
if "$DDPC" explain "$tmp/tiny.bin" --profile "$tmp/esc_prof.json" >"$tmp/esc.txt" 2>"$tmp/err"; then
  grep -qx 'profile: lab?\[31m?x' "$tmp/esc.txt" && ! grep -q $'\x1b' "$tmp/esc.txt" && echo "ok: a profile name's control characters are not printed" ||
    fail "profile name printed raw: $(grep '^profile' "$tmp/esc.txt" | od -c | head -3)"
else
  fail "the escape profile was refused: $(cat "$tmp/err")"
fi

# --json: one document, the same ranks, the default profile flagged
"$DDPC" explain --json "$tmp/zero1.bin" >"$tmp/zero1.explain.json" || fail "explain --json"
python3 - "$tmp/zero1.explain.json" "$tmp/zero1.json" <<'PY' || fail "explain --json content"
import json, sys
e, i = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert e["default_profile"] is True, e["default_profile"]
assert len(e["ranks"]) == len(i["ranks"]) == e["world"]
for er, ir in zip(e["ranks"], i["ranks"]):
    m = er["memory_bytes"]
    assert m["total"] == ir["total_bytes"] == sum(v for k, v in m.items() if k != "total"), (m, ir["total_bytes"])
    assert er["step_ms"] > 0 and er["comm_ms"] > 0 and len(er["critical_path_top"]) == 5
    assert 0 < er["forward_ms"] < er["step_ms"] and 0 < er["backward_ms"] and 0 < er["optimizer_ms"], er
    en = er["energy"]  # the built-in power model: 700 W limit, 118 W idle
    assert en["joules"] > 0 and en["link_gb"] > 0 and en["tflop"] > 0, en
    assert abs(en["joules"] - en["compute_joules"] - en["memory_joules"] - en["link_joules"]) < 1e-9 * en["joules"], en
    assert abs(en["power_floor_ms"] - en["joules"] / (700 - 118) * 1e3) < 1e-6 * en["power_floor_ms"], en
print("ok: --json")
PY
# an fp32 plan's FLOPs are all priced as fp32 (j_per_tflop_fp32), a bf16 plan's none of them
"$DDPC" explain --json "$tmp/tiny.bin" >"$tmp/tiny.explain.json" || fail "explain --json tiny"
python3 - "$tmp/tiny.explain.json" "$tmp/zero1.explain.json" <<'PY' || fail "explain --json: the fp32 TFLOP"
import json, sys
t, z = (json.load(open(a))["ranks"][0]["energy"] for a in sys.argv[1:3])
assert t["tflop"] > 0 and t["tflop_fp32"] == t["tflop"], t
assert z["tflop"] > 0 and z["tflop_fp32"] == 0, z
print("ok: fp32 TFLOP: tiny (fp32) all %.3g, zero1 (bf16) none" % t["tflop"])
PY
grep -qE "^energy above idle .*TFLOP, [0-9.]+ of them fp32\)" "$tmp/tiny.r0" || fail "tiny: the energy line does not say its TFLOP are fp32"

# --rank: only that rank
"$DDPC" explain --rank 1 "$tmp/toy_ddp.bin" >"$tmp/rank1.txt" || fail "explain --rank 1"
grep -q "^== rank 1 ==" "$tmp/rank1.txt" && ! grep -q "^== rank 0 ==" "$tmp/rank1.txt" || fail "--rank 1 printed other ranks"

# a profile file: used and named; slower numbers give a slower step
cat >"$tmp/slow.json" <<'JSON'
{"name": "half speed", "launch_us": 8, "hbm_gbps": 2000, "gemm_tflops_16": 325, "gemm_tflops_32": 25,
 "gemm_small_dim": 1024, "gemm_small_scale": 0.5, "attention_tflops": 105,
 "collectives": {"all_reduce": {"alpha_us": 40, "busbw_gbps": 150}, "reduce_scatter": {"alpha_us": 40, "busbw_gbps": 150},
  "all_gather": {"alpha_us": 40, "busbw_gbps": 150}, "broadcast": {"alpha_us": 40, "busbw_gbps": 150},
  "send_recv": {"alpha_us": 20, "busbw_gbps": 150}}}
JSON
"$DDPC" explain --profile "$tmp/slow.json" --rank 0 "$tmp/bucketed_10mb.bin" >"$tmp/slow.txt" || fail "explain --profile"
grep -q "^profile: half speed$" "$tmp/slow.txt" || fail "--profile: the profile is not named"
fast=$(awk '/^predicted step time/ { print $4; exit }' "$tmp/bucketed_10mb.txt")
slow=$(awk '/^predicted step time/ { print $4; exit }' "$tmp/slow.txt")
awk -v a="$fast" -v b="$slow" 'BEGIN { exit !(b > 1.9 * a && b < 2.1 * a) }' ||
  fail "half-speed profile: step $slow ms, default $fast ms (expected about twice)"
echo "ok: bucketed_10mb rank 0: $fast ms default, $slow ms at half speed"
grep -q "^power floor" "$tmp/slow.txt" || fail "a profile without \"power\": not the built-in power model"
# "power" with limit_w 0: no power model, no energy lines, energy null in --json
sed 's/^{"name": "half speed",/{"name": "no power", "power": {"limit_w": 0, "idle_w": 0, "j_per_tflop": 0, "j_per_tflop_fp32": 0, "j_per_gb_hbm": 0, "j_per_gb_copy_engine": 0, "j_per_gb_nccl": 0},/' \
  "$tmp/slow.json" >"$tmp/nopower.json"
"$DDPC" explain --profile "$tmp/nopower.json" "$tmp/tiny.bin" >"$tmp/nopower.txt" || fail "explain, power limit 0"
grep -q "^profile: no power$" "$tmp/nopower.txt" && ! grep -qE "^(energy above idle|power floor)" "$tmp/nopower.txt" ||
  fail "power limit 0: $(grep -E '^(profile|energy|power)' "$tmp/nopower.txt")"
# a 1 W headroom over idle: the power floor is above the simulated step, so it is the predicted step (text,
# --json with the simulated step beside it, and the compile-time prediction of a plan compiled with it)
sed 's/^{"name": "half speed",/{"name": "one watt", "power": {"limit_w": 119, "idle_w": 118, "j_per_tflop": 1.15, "j_per_tflop_fp32": 12.5, "j_per_gb_hbm": 0.117, "j_per_gb_copy_engine": 0.455, "j_per_gb_nccl": 0.535},/' \
  "$tmp/slow.json" >"$tmp/onewatt.json"
"$DDPC" explain --profile "$tmp/onewatt.json" --rank 0 "$tmp/bucketed_10mb.bin" >"$tmp/onewatt.txt" || fail "explain, 1 W headroom"
grep -qE "^predicted step time +[0-9.]+ ms \(the power floor; the simulated step [0-9.]+ ms\)$" "$tmp/onewatt.txt" ||
  fail "1 W headroom: $(grep '^predicted step' "$tmp/onewatt.txt")"
"$DDPC" explain --json --profile "$tmp/onewatt.json" "$tmp/bucketed_10mb.bin" >"$tmp/onewatt.json.out" || fail "explain --json, 1 W"
python3 - "$tmp/onewatt.json.out" "$tmp/zero1.explain.json" <<'PY' || fail "explain --json: the floor as the step"
import json, sys
for r in json.load(open(sys.argv[1]))["ranks"]:
    assert r["step_bound"] == "power floor" and r["step_ms"] == r["energy"]["power_floor_ms"] > r["simulated_step_ms"] > 0, r
for r in json.load(open(sys.argv[2]))["ranks"]:  # the built-in profile on zero1: the simulated step is the larger
    assert r["step_bound"] == "simulated" and r["step_ms"] == r["simulated_step_ms"] >= r["energy"]["power_floor_ms"], r
print("ok: the power floor as the predicted step (1 W headroom); the simulated step where it is the larger")
PY
"$DDPC" "$DDP_SOURCE_DIR/schedules/bucketed_10mb.lua" -o "$tmp/onewatt.bin" -q --profile "$tmp/onewatt.json" ||
  fail "compile with the 1 W profile"
"$DDPC" inspect --json "$tmp/onewatt.bin" >"$tmp/onewatt.inspect.json" || fail "inspect the 1 W plan"
python3 - "$tmp/onewatt.inspect.json" "$tmp/onewatt.json.out" <<'PY' || fail "the stored prediction is not the floor"
import json, sys
m, e = json.load(open(sys.argv[1]))["meta"], json.load(open(sys.argv[2]))["ranks"][0]
assert abs(m["predicted_step_ms"] - e["step_ms"]) <= 1e-6 * e["step_ms"], (m["predicted_step_ms"], e["step_ms"])
print("ok: the plan's stored prediction is the floor too (%.3f ms)" % m["predicted_step_ms"])
PY
"$DDPC" explain --json --profile "$tmp/nopower.json" "$tmp/tiny.bin" |
  python3 -c 'import json,sys; assert all(r["energy"] is None for r in json.load(sys.stdin)["ranks"])' ||
  fail "power limit 0: --json has energy"
echo "ok: the power model: built-in by default and without a \"power\" field, off with limit_w 0"

# refusals
sed 's/"hbm_gbps": 2000/"hbm_gbps": -5/' "$tmp/slow.json" >"$tmp/bad.json"
"$DDPC" explain --profile "$tmp/bad.json" "$tmp/tiny.bin" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || fail "bad profile: exit $rc, expected 1"
[ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "bad.json: hbm_gbps: must be a number > 0 and <= 1e+301 (got -5)" "$tmp/err" ||
  fail "bad profile: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "bad profile: something was printed to stdout"
check_exit() { # want-status what args...
  local want=$1 what=$2
  shift 2
  "$DDPC" explain "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want"
  [ "$want" = 0 ] || { [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$what: not one line: $(cat "$tmp/err")"; }
}
check_exit 2 "no plan"
check_exit 2 "two plans" "$tmp/tiny.bin" "$tmp/tiny.bin"
check_exit 2 "--rank past the world" --rank 2 "$tmp/toy_ddp.bin"
check_exit 2 "unknown option" --bogus "$tmp/tiny.bin"
check_exit 1 "missing plan" "$tmp/nothing.bin"
check_exit 1 "missing profile" --profile "$tmp/nothing.json" "$tmp/tiny.bin"
check_exit 0 "--help" --help
"$DDPC" explain --help | grep -q "^usage: ddpc explain PLAN" || fail "--help: no usage line"
"$DDPC" --help | grep -q "ddpc explain PLAN" || fail "ddpc --help does not list explain"
exit $fail
