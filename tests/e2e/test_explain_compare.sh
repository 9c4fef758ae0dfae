#!/usr/bin/env bash
# tests/e2e/test_explain_compare.sh: the prediction next to the measurement (issue 16). (1) ddpc stores the
# explain prediction in the plan (inspect shows it; --profile FILE changes it; a bad profile is refused);
# (2) ddprun's run line carries it as "predicted", equal to `ddpc explain --json`'s rank 0; (3) `ddpc explain
# --compare` on real reference-executor metrics (tiny: 1 rank with 2 warm-up steps; toy_ddp: 2 ranks): the
# table's structure, and its measured column equal to the medians computed here from the metrics; (4) the
# arithmetic on hand-written metrics with known medians (ratios 1.050, 1.250, ... printed exactly, the
# verdicts, warm-up steps skipped, an even count's median, the scalar fields when there are no per-rank
# arrays; the energy per step from the counters against the power model's); (5) bad inputs: one line, exit 1.
. "$(dirname "$0")/lib.sh"
e2e_tmp explain_compare

# (1) the stored prediction
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/tiny.bin" --set warmup=2 --set steps=6 -q || die "tiny does not compile"
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/toy.bin" -q || die "toy_ddp does not compile"
"$DDPC" inspect "$tmp/tiny.bin" >"$tmp/tiny.inspect" || die "inspect tiny"
grep -qE "^predicted_step_ms +[0-9.e-]+$" "$tmp/tiny.inspect" || fail "inspect: no predicted_step_ms"
grep -qE "^predicted_profile +built-in H100/H200 default \(uncalibrated\)$" "$tmp/tiny.inspect" || fail "inspect: no predicted_profile"
grep -qE "^predicted_error +-$" "$tmp/tiny.inspect" || fail "inspect: a prediction error on tiny"
cat >"$tmp/slow.json" <<'JSON'
{"name": "half speed", "launch_us": 8, "hbm_gbps": 2000, "gemm_tflops_16": 325, "gemm_tflops_32": 25,
 "gemm_small_dim": 1024, "gemm_small_scale": 0.5, "attention_tflops": 105,
 "collectives": {"all_reduce": {"alpha_us": 40, "busbw_gbps": 150}, "reduce_scatter": {"alpha_us": 40, "busbw_gbps": 150},
  "all_gather": {"alpha_us": 40, "busbw_gbps": 150}, "broadcast": {"alpha_us": 40, "busbw_gbps": 150},
  "send_recv": {"alpha_us": 20, "busbw_gbps": 150}}}
JSON
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/tiny_slow.bin" --set warmup=2 --set steps=6 --profile "$tmp/slow.json" -q ||
  fail "compile with --profile"
"$DDPC" inspect --json "$tmp/tiny.bin" >"$tmp/tiny.json" && "$DDPC" inspect --json "$tmp/tiny_slow.bin" >"$tmp/tiny_slow.json" &&
  "$DDPC" explain --json --profile "$tmp/slow.json" "$tmp/tiny.bin" >"$tmp/tiny_slow.explain.json" || fail "inspect/explain --json"
python3 - "$tmp" <<'PY' || fail "the stored prediction with --profile"
import json, sys
t = sys.argv[1]
fast, slow = (json.load(open(f"{t}/{n}.json"))["meta"] for n in ("tiny", "tiny_slow"))
e = json.load(open(f"{t}/tiny_slow.explain.json"))["ranks"][0]
assert slow["predicted_profile"] == "half speed", slow["predicted_profile"]
assert 1.9 * fast["predicted_step_ms"] < slow["predicted_step_ms"] < 2.1 * fast["predicted_step_ms"], (fast, slow)
for k in ("step", "forward", "backward", "optimizer", "comm", "exposed_comm"):
    assert abs(slow[f"predicted_{k}_ms"] - e[f"{k}_ms"]) <= 1e-8 * max(1, e[f"{k}_ms"]), (k, slow, e)
print("ok: --profile: predicted %.4f ms (default %.4f ms), equal to explain --profile" %
      (slow["predicted_step_ms"], fast["predicted_step_ms"]))
PY
sed 's/"hbm_gbps": 2000/"hbm_gbps": 0/' "$tmp/slow.json" >"$tmp/bad.json"
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/never.bin" --profile "$tmp/bad.json" -q 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^ddpc: --profile: .*bad.json: hbm_gbps: must be a number > 0" "$tmp/err" ||
  fail "a bad --profile: exit $rc: $(cat "$tmp/err")"
[ -e "$tmp/never.bin" ] && fail "a bad --profile left a plan"
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny.lua" -o "$tmp/slow.json" --profile "$tmp/slow.json" -q 2>"$tmp/err"
[ $? = 2 ] && grep -q "same file as the profile" "$tmp/err" || fail "-o over the profile: $(cat "$tmp/err")"

# (2) the run line's prediction is explain --json's rank 0
"$DDPRUN" "$tmp/tiny.bin" --device ref --metrics "$tmp/tiny.jsonl" --quiet || die "tiny run"
"$DDPRUN" "$tmp/toy.bin" --device ref --metrics "$tmp/toy.jsonl" --quiet || die "toy_ddp run"
for n in tiny toy; do "$DDPC" explain --json "$tmp/$n.bin" >"$tmp/$n.explain.json" || fail "explain --json $n"; done
python3 - "$tmp" <<'PY' || fail "the run line's prediction"
import json, sys
t = sys.argv[1]
for n in ("tiny", "toy"):
    run = json.loads(open(f"{t}/{n}.jsonl").readline())
    assert run["event"] == "run" and "predicted" in run, run
    e = json.load(open(f"{t}/{n}.explain.json"))
    pr, r0 = run["predicted"], e["ranks"][0]
    assert pr["profile"] == e["profile"] == "built-in H100/H200 default (uncalibrated)", (pr, e["profile"])
    keys = ("step_ms", "forward_ms", "backward_ms", "optimizer_ms", "comm_ms", "exposed_comm_ms")
    assert sorted(pr) == sorted(keys + ("profile",)), pr
    for k in keys:  # both print 9 significant digits of the same double
        assert pr[k] == r0[k], (n, k, pr[k], r0[k])
    assert pr["step_ms"] > 0 and (n == "tiny") == (pr["comm_ms"] == 0), pr
    print("ok: %s: the run line's prediction equals explain's rank 0 (step %g ms, comm %g ms)" % (n, pr["step_ms"], pr["comm_ms"]))
PY

# a plan the simulator cannot run on (today the 1F1B pipelines: their sends and receives never pair up in
# the simulator) still compiles; then the plan has no prediction, inspect says why, the run line carries
# none and --compare refuses with one line. Whichever holds, the run line has "predicted" exactly when the
# plan has a prediction.
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_pipeline.lua" -o "$tmp/pipe.bin" -q || fail "tiny_pipeline does not compile"
"$DDPRUN" "$tmp/pipe.bin" --device ref --steps 2 --metrics "$tmp/pipe.jsonl" --quiet || fail "tiny_pipeline run"
"$DDPC" inspect --json "$tmp/pipe.bin" >"$tmp/pipe.json" && "$DDPC" inspect "$tmp/pipe.bin" >"$tmp/pipe.inspect" || fail "inspect pipe"
python3 - "$tmp" <<'PY' || fail "a plan without a prediction"
import json, sys
t = sys.argv[1]
m = json.load(open(f"{t}/pipe.json"))["meta"]
run = json.loads(open(f"{t}/pipe.jsonl").readline())
text = open(f"{t}/pipe.inspect").read()
if m["predicted_step_ms"] > 0:
    assert run["predicted"]["step_ms"] > 0 and not m["predicted_error"], (run, m)
    print("ok: tiny_pipeline now has a prediction (%g ms), and the run line carries it" % m["predicted_step_ms"])
else:
    assert "predicted" not in run, run
    assert m["predicted_error"] and "never meets its partners" in m["predicted_error"], m
    assert all(m[f"predicted_{k}_ms"] == 0 for k in ("forward", "backward", "optimizer", "comm", "exposed_comm")), m
    assert "predicted_step_ms      0 (no prediction: see predicted_error)" in text, text[:2000]
    print("ok: tiny_pipeline: no prediction (%s); the run line carries none" % m["predicted_error"])
PY
if ! grep -q '"predicted"' "$tmp/pipe.jsonl"; then
  "$DDPC" explain "$tmp/pipe.bin" --compare "$tmp/pipe.jsonl" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "pipe\.bin: the simulator cannot run on this plan: rank 0: " "$tmp/err" ||
    fail "--compare on a plan the simulator cannot run: exit $rc: $(cat "$tmp/err")"
fi

# (3) --compare on the real metrics: structure, and the measured column = the medians of the non-warm-up steps
phases=("step" "forward" "backward" "optimizer" "communication" "exposed communication")
for n in tiny toy; do
  "$DDPC" explain "$tmp/$n.bin" --compare "$tmp/$n.jsonl" >"$tmp/$n.cmp" 2>"$tmp/err" || { fail "compare $n: $(cat "$tmp/err")"; continue; }
  "$DDPC" explain "$tmp/$n.bin" --compare "$tmp/$n.jsonl" --json >"$tmp/$n.cmp.json" || fail "compare --json $n"
  world=$([ $n = tiny ] && echo 1 || echo 2)
  grep -q "^== explain --compare ==$" "$tmp/$n.cmp" || fail "$n: no header"
  for ((r = 0; r < world; r++)); do
    sed -n "/^== rank $r ==\$/,/^\$/p" "$tmp/$n.cmp" >"$tmp/$n.r$r"
    grep -qE "^phase +predicted ms +measured ms +measured/predicted +error %$" "$tmp/$n.r$r" || fail "$n rank $r: no table head"
    for ph in "${phases[@]}"; do
      grep -qE "^$ph +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3} +([0-9]+\.[0-9]{3}|n/a) +([-+][0-9]+\.[0-9]|n/a)$" "$tmp/$n.r$r" ||
        fail "$n rank $r: no '$ph' row: $(grep "^$ph " "$tmp/$n.r$r")"
    done
    grep -qE "^verdict: step within 10%: (yes|no); exposed communication within 2 ms: (yes|no|n/a)$" "$tmp/$n.r$r" ||
      fail "$n rank $r: no verdict line"
  done
done
grep -q "metrics: .*tiny.jsonl: 6 step lines, 2 warm-up skipped, medians of 4$" "$tmp/tiny.cmp" || fail "tiny: warm-up not skipped: $(grep ^metrics "$tmp/tiny.cmp")"
grep -q "^the run recorded the plan's compile-time prediction: step " "$tmp/tiny.cmp" || fail "tiny: the recorded prediction is not shown"
python3 - "$tmp" <<'PY' || fail "--compare's measured medians and predictions"
import json, statistics, sys
t = sys.argv[1]
names = {"step": "rank_step_ms", "forward": "rank_forward_ms", "backward": "rank_backward_ms",
         "optimizer": "rank_optimizer_ms", "communication": "rank_comm_ms", "exposed communication": "rank_exposed_comm_ms"}
pred_keys = {"step": "step_ms", "forward": "forward_ms", "backward": "backward_ms", "optimizer": "optimizer_ms",
             "communication": "metrics_comm_ms", "exposed communication": "metrics_exposed_comm_ms"}
for n in ("tiny", "toy"):
    steps = [json.loads(l) for l in open(f"{t}/{n}.jsonl") if '"step"' in l]
    timed = [s for s in steps if not s["warmup"]]
    c, e = json.load(open(f"{t}/{n}.cmp.json")), json.load(open(f"{t}/{n}.explain.json"))
    assert c["medians_of"] == len(timed) and c["step_lines"] == len(steps), c
    assert len(c["ranks"]) == c["world"] == e["world"]
    for cr, er in zip(c["ranks"], e["ranks"]):
        r = cr["rank"]
        assert [p["phase"] for p in cr["phases"]] == list(names), cr
        for p in cr["phases"]:
            want = statistics.median(s[names[p["phase"]]][r] for s in timed)
            assert p["measured_ms"] == want, (n, r, p, want)
            assert abs(p["predicted_ms"] - er[pred_keys[p["phase"]]]) <= 1e-8 * max(1, p["predicted_ms"]), (p, er)
            if p["predicted_ms"] > 0:
                assert abs(p["ratio"] - want / p["predicted_ms"]) <= 1e-9 * p["ratio"], p
    print("ok: %s: --compare's medians (%d steps) and predictions match, %d rank(s)" % (n, len(timed), c["world"]))
PY

# (4) the arithmetic: hand-written metrics for toy_ddp's plan whose medians are the prediction times a
# known factor (rank 0: step 1.05, forward 0.8, backward 1.25, optimizer 2, communication 1.1; rank 1: step
# 1.25, communication 0.5), the exposed
# communication 1.5 ms (rank 0) and 2.5 ms (rank 1) above the prediction; a warm-up step far off.
python3 - "$tmp" <<'PY' || fail "writing the hand-made metrics"
import json, sys
t = sys.argv[1]
e = json.load(open(f"{t}/toy.explain.json"))["ranks"]
run = json.loads(open(f"{t}/toy.jsonl").readline())
fac = [{"step_ms": 1.05, "forward_ms": 0.8, "backward_ms": 1.25, "optimizer_ms": 2.0, "comm_ms": 1.1},
       {"step_ms": 1.25, "forward_ms": 1.0, "backward_ms": 1.0, "optimizer_ms": 1.0, "comm_ms": 0.5}]
add = [1.5, 2.5]
arr = {"step_ms": "rank_step_ms", "forward_ms": "rank_forward_ms", "backward_ms": "rank_backward_ms",
       "optimizer_ms": "rank_optimizer_ms", "comm_ms": "rank_comm_ms", "exposed_comm_ms": "rank_exposed_comm_ms"}
watts = [500.0, 400.0]  # energy: the warm-up line's readings, then each timed step 0.05 s of counter span later
def line(step, scale, warm):
    d = {"step": step, "loss": 1.0, "warmup": warm, "host_ms": 50.0,
         "rank_energy_span_s": [0.2 + 0.05 * (step - 1)] * 2,
         "rank_energy_total_J": [j0 + w * 0.05 * (step - 1) for j0, w in zip((100.0, 80.0), watts)]}
    for k, a in arr.items():
        src = {"comm_ms": "metrics_comm_ms", "exposed_comm_ms": "metrics_exposed_comm_ms"}.get(k, k)
        d[a] = [(e[r][src] + add[r]) * scale if k == "exposed_comm_ms" else e[r][src] * fac[r][k] * scale for r in range(2)]
        d[k] = d[a][0]
    return json.dumps(d)
with open(f"{t}/hand.jsonl", "w") as f:  # timed scales 0.5, 0.98, 1.02, 3: the median of the four is 1
    print(json.dumps(run), file=f)
    print(line(1, 100.0, True), file=f)
    for k, s in enumerate((3.0, 0.98, 0.5, 1.02)):
        print(line(k + 2, s, False), file=f)
PY
"$DDPC" explain "$tmp/toy.bin" --compare "$tmp/hand.jsonl" >"$tmp/hand.cmp" 2>"$tmp/err" || fail "compare hand: $(cat "$tmp/err")"
row() { sed -n "/^== rank $1 ==\$/,/^\$/p" "$tmp/hand.cmp" | grep -E "^$2 +[0-9n]" | awk '{ print $(NF-1), $NF }'; }
[ "$(row 0 step)" = "1.050 -4.8" ] || fail "rank 0 step: '$(row 0 step)', want '1.050 -4.8'"
[ "$(row 0 forward)" = "0.800 +25.0" ] || fail "rank 0 forward: '$(row 0 forward)', want '0.800 +25.0'"
[ "$(row 0 backward)" = "1.250 -20.0" ] || fail "rank 0 backward: '$(row 0 backward)'"
[ "$(row 0 optimizer)" = "2.000 -50.0" ] || fail "rank 0 optimizer: '$(row 0 optimizer)'"
[ "$(row 0 communication)" = "1.100 -9.1" ] || fail "rank 0 communication: '$(row 0 communication)'"
[ "$(row 1 step)" = "1.250 -20.0" ] || fail "rank 1 step: '$(row 1 step)', want '1.250 -20.0'"
[ "$(row 1 communication)" = "0.500 +100.0" ] || fail "rank 1 communication: '$(row 1 communication)'"
grep -q "^metrics: .*hand.jsonl: 5 step lines, 1 warm-up skipped, medians of 4$" "$tmp/hand.cmp" || fail "hand: header"
# energy: 500 W and 400 W over the timed steps times their mean host time (50 ms); the prediction is the
# built-in power model's idle 118 W times the measured step plus explain's joules above idle
python3 - "$tmp" <<'PY' || fail "hand: energy lines"
import json, re, sys
t = sys.argv[1]
e = json.load(open(f"{t}/toy.explain.json"))["ranks"]
txt = open(f"{t}/hand.cmp").read().split("== rank ")[1:]
for r, (w, fac) in enumerate(((500, 1.05), (400, 1.25))):
    m = re.search(r"^energy per step: predicted ([0-9.]+) J \(118 W idle x the measured step \+ ([0-9.]+) J above idle\), "
                  r"measured ([0-9.]+) J \(([0-9]+) W\); error ([-+][0-9.]+)%$", txt[r], re.M)
    assert m, f"rank {r}: no energy line in:\n{txt[r]}"
    pred, dyn, meas, watts, errp = (float(x) for x in m.groups())
    want = 118 * e[r]["step_ms"] * fac / 1e3 + e[r]["energy"]["joules"]
    assert abs(meas - w * 0.05) < 1e-3 and int(watts) == w, (r, meas, watts)
    assert abs(dyn - e[r]["energy"]["joules"]) < 1e-3 and abs(pred - want) < 2e-3, (r, pred, want, dyn)
    assert abs(errp - (pred - meas) / meas * 100) < 0.06, (r, errp)
print("ok: hand-made metrics: energy per step measured 25 / 20 J, predicted from the power model")
PY
grep -q "^energy per step: predicted [0-9.]* J (118 W idle x the measured step + [0-9.]* J above idle), measured n/a (no energy readings in the metrics)$" "$tmp/tiny.cmp" ||
  fail "real reference metrics (no energy readings): $(grep '^energy' "$tmp/tiny.cmp")"
[ "$(grep -c '^verdict: step within 10%: yes; exposed communication within 2 ms: yes$' "$tmp/hand.cmp")" = 1 ] &&
  [ "$(grep -c '^verdict: step within 10%: no; exposed communication within 2 ms: no$' "$tmp/hand.cmp")" = 1 ] &&
  sed -n '/^== rank 1 ==$/,/^$/p' "$tmp/hand.cmp" | grep -q "^verdict: step within 10%: no" || fail "hand: verdicts: $(grep ^verdict "$tmp/hand.cmp")"
"$DDPC" explain "$tmp/toy.bin" --compare "$tmp/hand.jsonl" --json --rank 1 >"$tmp/hand.json" || fail "compare hand --json --rank 1"
python3 - "$tmp" <<'PY' || fail "hand --json"
import json, sys
t = sys.argv[1]
c = json.load(open(f"{t}/hand.json"))
e = json.load(open(f"{t}/toy.explain.json"))["ranks"][1]
assert [r["rank"] for r in c["ranks"]] == [1], c["ranks"]
ph = {p["phase"]: p for p in c["ranks"][0]["phases"]}
# the file was written from explain --json's 9 significant digits, the prediction is the full double
assert abs(ph["step"]["ratio"] - 1.25) < 1e-7 and abs(ph["step"]["error_pct"] - (-20.0)) < 1e-5, ph["step"]
x = ph["exposed communication"]
assert abs(x["measured_ms"] - x["predicted_ms"] - 2.5) < 1e-7 and abs(x["predicted_ms"] - e["metrics_exposed_comm_ms"]) < 1e-8, x
assert c["ranks"][0]["step_within_10pct"] is False and c["ranks"][0]["exposed_within_2ms"] is False, c["ranks"][0]
assert c["warmup_skipped"] == 1 and c["medians_of"] == 4 and c["recorded_prediction"]["profile"], c
en = c["ranks"][0]["energy"]
assert abs(en["measured_joules"] - 20.0) < 1e-9 and abs(en["measured_watts"] - 400.0) < 1e-9, en
assert abs(en["joules_above_idle"] - e["energy"]["joules"]) < 1e-6 * e["energy"]["joules"] + 1e-12, en
assert abs(en["error_pct"] - (en["predicted_joules"] - 20.0) / 20.0 * 100) < 1e-9, en
print("ok: hand-made metrics: ratios, errors and verdicts (rank 1 step ratio %.12f)" % ph["step"]["ratio"])
PY
# the scalar fields when a file has no per-rank arrays (rank 0 only), and the median of an odd count
python3 - "$tmp" <<'PY' || fail "writing the scalar metrics"
import json, sys
t = sys.argv[1]
e = json.load(open(f"{t}/tiny.explain.json"))["ranks"][0]
run = json.loads(open(f"{t}/tiny.jsonl").readline())
with open(f"{t}/scalar.jsonl", "w") as f:
    print(json.dumps(run), file=f)
    for k, s in enumerate((1.1, 0.7, 1.5)):  # median 1.1
        print(json.dumps({"step": k + 1, "warmup": False, "step_ms": e["step_ms"] * s, "forward_ms": e["forward_ms"] * s,
                          "backward_ms": 0, "optimizer_ms": e["optimizer_ms"] * s * 2, "comm_ms": 0, "exposed_comm_ms": 3}), file=f)
PY
"$DDPC" explain "$tmp/tiny.bin" --compare "$tmp/scalar.jsonl" >"$tmp/scalar.cmp" 2>"$tmp/err" || fail "compare scalar: $(cat "$tmp/err")"
grep -qE "^step +[0-9.]+ +[0-9.]+ +1\.100 +-9\.1$" "$tmp/scalar.cmp" || fail "scalar step: $(grep '^step ' "$tmp/scalar.cmp")"
grep -qE "^optimizer +[0-9.]+ +[0-9.]+ +2\.200 +-54\.5$" "$tmp/scalar.cmp" || fail "scalar optimizer: $(grep '^optimizer ' "$tmp/scalar.cmp")"
grep -qE "^backward +[0-9.]+ +0\.000 +0\.000 +n/a$" "$tmp/scalar.cmp" || fail "scalar backward 0: $(grep '^backward ' "$tmp/scalar.cmp")"
grep -qE "^communication +0\.000 +0\.000 +n/a +n/a$" "$tmp/scalar.cmp" || fail "scalar comm: $(grep '^communication ' "$tmp/scalar.cmp")"
grep -q "^verdict: step within 10%: yes; exposed communication within 2 ms: no$" "$tmp/scalar.cmp" || fail "scalar verdict: $(grep ^verdict "$tmp/scalar.cmp")"

# (5) bad inputs: one line, exit 1, nothing on stdout
bad() { # what pattern plan metrics [args...]
  local what=$1 pat=$2 plan=$3 metrics=$4
  shift 4
  "$DDPC" explain "$plan" --compare "$metrics" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" = 1 ] || fail "$what: exit $rc, expected 1"
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qE "$pat" "$tmp/err" || fail "$what: '$(cat "$tmp/err")', want /$pat/"
  [ -s "$tmp/out" ] && fail "$what: something was printed to stdout"
}
bad "missing metrics" "^ddpc explain --compare: .*nothing\.jsonl" "$tmp/tiny.bin" "$tmp/nothing.jsonl"
head -2 "$tmp/tiny.jsonl" >"$tmp/nosteps.jsonl"
bad "no step lines" "nosteps\.jsonl: no step lines$" "$tmp/tiny.bin" "$tmp/nosteps.jsonl"
bad "another plan" "tiny\.jsonl: the metrics of another plan: its run line says schedule '.*tiny\.lua', parallel 'single rank', world 1; .*toy\.bin is schedule '.*toy_ddp\.lua'.*world 2$" \
  "$tmp/toy.bin" "$tmp/tiny.jsonl"
sed '1s/"world": 2/"world": 3/' "$tmp/toy.jsonl" >"$tmp/world3.jsonl"
bad "another world" "world3\.jsonl: the metrics of another plan: .*world 3; " "$tmp/toy.bin" "$tmp/world3.jsonl"
tail -n +2 "$tmp/tiny.jsonl" >"$tmp/norun.jsonl"
bad "no run line" "norun\.jsonl:2: a step line before the \{\"event\": \"run\"\} line$" "$tmp/tiny.bin" "$tmp/norun.jsonl"
{ cat "$tmp/tiny.jsonl"; echo '{"step": 9, oops'; } >"$tmp/broken.jsonl"
bad "broken line" "broken\.jsonl:9: not a JSON object" "$tmp/tiny.bin" "$tmp/broken.jsonl"
sed '3s/"rank_step_ms": \[[0-9.]*\]/"rank_step_ms": [1, 2]/' "$tmp/tiny.jsonl" >"$tmp/wide.jsonl"
bad "a wrong array" "wide\.jsonl:3: \"rank_step_ms\" is not an array of 1 numbers" "$tmp/tiny.bin" "$tmp/wide.jsonl"
bad "a bad profile" "bad\.json: hbm_gbps" "$tmp/tiny.bin" "$tmp/tiny.jsonl" --profile "$tmp/bad.json"
sed '3s/"rank_energy_total_J": \[[^]]*\]/"rank_energy_total_J": [1, 2]/' "$tmp/tiny.jsonl" >"$tmp/wide_e.jsonl"
bad "a wrong energy array" "wide_e\.jsonl:3: \"rank_energy_total_J\" is not an array of 1 numbers" "$tmp/tiny.bin" "$tmp/wide_e.jsonl"
sed '3s/"rank_energy_span_s": \[[^]]*\]/"rank_energy_span_s": ["x"]/' "$tmp/tiny.jsonl" >"$tmp/str_e.jsonl"
bad "a string in the energy spans" "str_e\.jsonl:3: \"rank_energy_span_s\"\[0\] is not a number in \\[0, 1e12\\] or null" "$tmp/tiny.bin" "$tmp/str_e.jsonl"
sed '3s/"rank_step_ms": \[\([^],]*\)/"rank_step_ms": [-5/' "$tmp/tiny.jsonl" >"$tmp/neg_step.jsonl"
bad "a negative step time" "neg_step\.jsonl:3: \"rank_step_ms\"\[0\] is not a number in \\[0, 1e12\\]" "$tmp/tiny.bin" "$tmp/neg_step.jsonl"
# all steps warm-up: used, and said so
sed 's/"warmup": false/"warmup": true/' "$tmp/tiny.jsonl" >"$tmp/allwarm.jsonl"
"$DDPC" explain "$tmp/tiny.bin" --compare "$tmp/allwarm.jsonl" >"$tmp/allwarm.cmp" 2>"$tmp/err" &&
  grep -q "6 step lines, all warm-up steps, so medians of all 6" "$tmp/allwarm.cmp" || fail "all warm-up: $(cat "$tmp/err")"
"$DDPC" explain --help | grep -q -- "--compare METRICS.jsonl" || fail "explain --help does not name --compare"
"$DDPC" --help | grep -q -- "--profile FILE" || fail "ddpc --help does not name --profile"
exit $fail
