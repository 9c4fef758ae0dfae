#!/usr/bin/env bash
# tests/e2e/test_plot.sh: `ddpc plot split|throughput` (issue 12) and the metrics they read. (1) ddprun's
# metrics carry the run line (schedule, parallel, world, tokens_per_step) and per-rank arrays of world
# numbers, element 0 equal to rank 0's own fields, the optimizer-phase collectives non-zero under ZeRO-1
# only; (2) the plots of tiny_ddp on 1 and 2 ranks and a tiny ZeRO-1 on 2 ranks (reference executor) are
# well-formed SVG whose values equal an independent computation from the metrics (Python); (3) a
# hand-written file gives exact values (warmup steps skipped); (4) bad input is one line, exit 1 or 2, and
# no plot; (5) ddprun --bench plot escapes the implementation names it reads.
. "$(dirname "$0")/lib.sh"
e2e_tmp plot
S=$DDP_SOURCE_DIR/schedules
cat >"$tmp/tiny_zero1.lua" <<'LUA'
local models = require "models"
return schedule { model = models.tiny(), data = { global_batch = 8, tokens = "pattern", seed = 1 }, precision = "fp32",
  optimizer = adamw { lr = 3e-3 }, parallel = ddp { ranks = 2, sync = "flat", shard = "zero1" }, steps = 6, seed = 1 }
LUA
"$DDPC" "$S/tiny_ddp.lua" -o "$tmp/ddp1.bin" -q --set parallel.ranks=1 --set steps=6 || die "tiny_ddp on 1 rank"
"$DDPC" "$S/tiny_ddp.lua" -o "$tmp/ddp2.bin" -q --set steps=6 --set warmup=2 || die "tiny_ddp on 2 ranks"
"$DDPC" "$tmp/tiny_zero1.lua" -o "$tmp/zero1.bin" -q || die "tiny_zero1"
for r in ddp1 ddp2 zero1; do
  "$DDPRUN" "$tmp/$r.bin" --device ref --metrics "$tmp/$r.jsonl" --quiet || die "$r run"
done

# (1) the metrics
python3 - "$tmp" <<'PY' || fail "metrics: run line or per-rank arrays"
import json, sys
d = sys.argv[1]
for name, world, zero in (("ddp1", 1, False), ("ddp2", 2, False), ("zero1", 2, True)):
    lines = [json.loads(l) for l in open(f"{d}/{name}.jsonl")]
    run = lines[0]
    assert run.get("event") == "run", f"{name}: first line {run}"
    assert run["world"] == world and run["tokens_per_step"] == 8 * 32 and run["executor"] == "ref", run
    assert run["schedule"].endswith(".lua") and run["parallel"], run
    steps = [l for l in lines if "step" in l]
    assert len(steps) == 6, f"{name}: {len(steps)} steps"
    opt_comm = 0
    for s in steps:
        for k in ("rank_step_ms", "rank_exposed_comm_ms", "rank_optimizer_ms", "rank_optimizer_comm_ms", "rank_peak_mem_GiB",
                  "rank_forward_ms", "rank_backward_ms", "rank_comm_ms"):
            assert len(s[k]) == world, f"{name} step {s['step']}: {k} = {s[k]}"
        for k in ("step_ms", "exposed_comm_ms", "optimizer_ms", "peak_mem_GiB", "forward_ms", "backward_ms", "comm_ms"):
            assert s["rank_" + k][0] == s[k], f"{name} step {s['step']}: rank_{k}[0] {s['rank_' + k][0]} != {k} {s[k]}"
        assert all(p > 0 for p in s["rank_peak_mem_GiB"]), s
        opt_comm += sum(s["rank_optimizer_comm_ms"])
        assert all(0 <= c <= o for c, o in zip(s["rank_optimizer_comm_ms"], s["rank_optimizer_ms"])), s
    assert (opt_comm > 0) == zero, f"{name}: optimizer-phase collectives {opt_comm} ms"
    print(f"ok: {name}: world {world}, optimizer-phase collectives {opt_comm:.3f} ms over 6 steps")
PY

# (2) the plots of the three runs
"$DDPC" plot split -o "$tmp/split.svg" "$tmp/ddp1.jsonl" "$tmp/ddp2.jsonl" "$tmp/zero1.jsonl" >"$tmp/out" 2>&1 ||
  fail "plot split: $(cat "$tmp/out")"
grep -qx "wrote $tmp/split.svg (3 runs)" "$tmp/out" || fail "plot split said: $(cat "$tmp/out")"
"$DDPC" plot throughput -o "$tmp/thr.svg" "$tmp/ddp1.jsonl" "$tmp/ddp2.jsonl" "$tmp/zero1.jsonl" >"$tmp/out" 2>&1 ||
  fail "plot throughput: $(cat "$tmp/out")"
"$DDPC" plot throughput --label=ddp -o "$tmp/thr_l.svg" "$tmp/ddp1.jsonl" --label ddp "$tmp/ddp2.jsonl" \
  "$tmp/zero1.jsonl" --label "ZeRO-1 <&>" >"$tmp/out" 2>&1 || fail "plot throughput --label: $(cat "$tmp/out")"
python3 - "$tmp" <<'PY' || fail "the plots do not show the metrics"
import json, re, statistics, sys, xml.dom.minidom as minidom
d = sys.argv[1]

def texts(doc, tag):
    return [e.firstChild.data if e.firstChild else "" for e in doc.getElementsByTagName(tag)]

def expected(name):  # the split and throughput, computed here from the metrics
    lines = [json.loads(l) for l in open(f"{d}/{name}.jsonl")]
    run, steps = lines[0], [l for l in lines if "step" in l]
    timed = [s for s in steps if not s["warmup"]] or steps
    w = run["world"]
    parts = {k: [0.0] * w for k in ("compute", "exposed communication", "optimizer", "idle")}
    for s in timed:
        slow = max(s["rank_step_ms"])
        for r in range(w):
            e = s["rank_exposed_comm_ms"][r]
            o = max(0.0, s["rank_optimizer_ms"][r] - s["rank_optimizer_comm_ms"][r])
            parts["exposed communication"][r] += e / len(timed)
            parts["optimizer"][r] += o / len(timed)
            parts["compute"][r] += max(0.0, s["rank_step_ms"][r] - e - o) / len(timed)
            parts["idle"][r] += (slow - s["rank_step_ms"][r]) / len(timed)
    tps = run["tokens_per_step"] / (statistics.mean(s["step_ms"] for s in timed) * 1e-3)
    return run, parts, tps, len(timed)

split = minidom.parse(f"{d}/split.svg")
assert split.documentElement.tagName == "svg"
titles = texts(split, "title")
assert len(titles) == (1 + 2 + 2) * 4, titles
t = texts(split, "text")
for label, want in (("ddp1", "tiny_ddp: 1 worker, single rank (6 steps)"),
                    ("ddp2", "tiny_ddp: 2 workers, ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward (4 steps)"),
                    ("zero1", "tiny_zero1: 2 workers, ddp ranks=2 sync=flat shard=zero1 (6 steps)")):
    assert want in t, f"no heading {want!r} in {t}"
    run, parts, _, n = expected(label)
    lab = "tiny_ddp" if label.startswith("ddp") else "tiny_zero1"
    got = [x for x in titles if x.startswith(lab + " rank ")]
    for r in range(run["world"]):
        for k, v in parts.items():
            pat = f"{lab} rank {r}: {k} "
            vals = [float(re.search(r"([-0-9.]+) ms$", x).group(1)) for x in got if x.startswith(pat)]
            assert any(abs(g - v[r]) <= 1e-3 + 1e-4 * abs(v[r]) for g in vals), f"{label} rank {r} {k}: want {v[r]:.4f}, svg {vals}"
    print(f"ok: split {label}: " + ", ".join(f"rank {r} " + "/".join(f"{parts[k][r]:.3f}" for k in parts) for r in range(run["world"])))
# every bar of a run ends at the slowest worker's mean step, within the plot area
bars = {}
for e in split.getElementsByTagName("rect"):
    tt = e.getElementsByTagName("title")
    if tt:
        key = tt[0].firstChild.data.split(":")[0]
        x, wd = float(e.getAttribute("x")), float(e.getAttribute("width"))
        assert wd >= 0 and 0 <= x <= 900, (key, x, wd)
        bars[key] = max(bars.get(key, 0), x + wd)
assert abs(bars["tiny_zero1 rank 0"] - bars["tiny_zero1 rank 1"]) < 0.1, bars
assert max(bars.values()) <= 900 - 90 + 0.1, bars

thr = minidom.parse(f"{d}/thr.svg")
circles = texts(thr, "title")
for label in ("ddp1", "ddp2", "zero1"):
    run, _, tps, _ = expected(label)
    lab = "tiny_ddp" if label.startswith("ddp") else "tiny_zero1"
    w = run["world"]
    pat = f"{lab}: {w} worker{'s' if w > 1 else ''}, "
    vals = [float(x[len(pat):].split(" ")[0]) for x in circles if x.startswith(pat)]
    assert len(vals) == 1 and abs(vals[0] - tps) <= 0.1 + 1e-5 * tps, f"{label}: want {tps:.1f} tokens/s, svg {vals}"
    print(f"ok: throughput {label}: {tps:.1f} tokens/s at {w} worker(s)")
_, _, tps1, _ = expected("ddp1")
ideal = [x for x in circles if x.startswith("tiny_ddp ideal: ")]
assert len(ideal) == 1 and abs(float(ideal[0].split()[2]) - tps1) <= 0.1, (ideal, tps1)
legend = texts(thr, "text")
assert "tiny_ddp" in legend and "tiny_zero1" in legend and "ideal, linear from 1 worker" in legend, legend
# the points inside the plot area (x: 90 .. 760-220, y: 40 .. 480-56)
for e in thr.getElementsByTagName("circle"):
    cx, cy = float(e.getAttribute("cx")), float(e.getAttribute("cy"))
    assert 90 <= cx <= 540 and 40 <= cy <= 424, (cx, cy)
lab = minidom.parse(f"{d}/thr_l.svg")
legend = texts(lab, "text")
assert "ddp" in legend and "ZeRO-1 <&>" in legend and "tiny_ddp" not in legend, legend
print("ok: labels, ideal line and points")
PY

# (3) a hand-written file: exact values; the warmup step (huge numbers) is skipped
cat >"$tmp/hand.jsonl" <<'EOF'
{"event": "run", "schedule": "dir/my run.lua", "parallel": "ddp ranks=2", "world": 2, "tokens_per_step": 1000, "executor": "ref"}
{"event": "memory", "rank": 0}
{"step": 1, "step_ms": 900, "warmup": true, "rank_step_ms": [900, 900], "rank_exposed_comm_ms": [900, 0], "rank_optimizer_ms": [0, 0], "rank_optimizer_comm_ms": [0, 0], "rank_peak_mem_GiB": [9, 9]}
{"step": 2, "step_ms": 10, "warmup": false, "rank_step_ms": [10, 12], "rank_exposed_comm_ms": [2, 1], "rank_optimizer_ms": [3, 1], "rank_optimizer_comm_ms": [1, 0], "rank_peak_mem_GiB": [1, 2]}
{"step": 3, "step_ms": 10, "warmup": false, "rank_step_ms": [10, 12], "rank_exposed_comm_ms": [2, 1], "rank_optimizer_ms": [3, 1], "rank_optimizer_comm_ms": [1, 0], "rank_peak_mem_GiB": [1, 2]}
EOF
"$DDPC" plot split -o "$tmp/hand.svg" "$tmp/hand.jsonl" >/dev/null || fail "plot split of the hand-written file"
for want in "my run rank 0: compute 6.0000 ms" "my run rank 0: exposed communication 2.0000 ms" \
  "my run rank 0: optimizer 2.0000 ms" "my run rank 0: idle 2.0000 ms" "my run rank 1: compute 10.0000 ms" \
  "my run rank 1: exposed communication 1.0000 ms" "my run rank 1: optimizer 1.0000 ms" "my run rank 1: idle 0.0000 ms"; do
  grep -qF "<title>$want</title>" "$tmp/hand.svg" || fail "hand.svg: no '$want'"
done
"$DDPC" plot throughput -o "$tmp/hand_t.svg" "$tmp/hand.jsonl" >/dev/null || fail "plot throughput of the hand-written file"
grep -qF "<title>my run: 2 workers, 100000.0 tokens/s, 10.0000 ms/step</title>" "$tmp/hand_t.svg" ||
  fail "hand_t.svg: not 1000 tokens in 10 ms"

# (4) bad input: one line on stderr, the exit status, no plot
bad() { # STATUS PATTERN ARGS...
  local want=$1 pat=$2
  shift 2
  rm -f "$tmp/bad.svg"
  "$DDPC" plot "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "ddpc plot $*: exit $rc, want $want: $(cat "$tmp/bad.err")"
  [ "$(wc -l <"$tmp/bad.err")" = 1 ] && grep -qE "$pat" "$tmp/bad.err" ||
    fail "ddpc plot $*: stderr is not one line matching '$pat': $(cat "$tmp/bad.err")"
  [ ! -e "$tmp/bad.svg" ] || fail "ddpc plot $*: wrote a plot"
}
head -2 "$tmp/ddp2.jsonl" >"$tmp/nosteps.jsonl"
{ head -3 "$tmp/ddp2.jsonl"; echo '{"step": 2, "loss": '; } >"$tmp/trunc.jsonl"
{ head -3 "$tmp/ddp2.jsonl"; echo '[1, 2]'; } >"$tmp/array.jsonl"
sed 's/"rank_step_ms": \[[^]]*\]/"rank_step_ms": [1.0]/' "$tmp/ddp2.jsonl" >"$tmp/short.jsonl"
sed 's/"rank_optimizer_ms": \[\([^],]*\),/"rank_optimizer_ms": ["x",/' "$tmp/ddp2.jsonl" >"$tmp/str.jsonl"
grep -v '"event": "run"' "$tmp/ddp2.jsonl" >"$tmp/old.jsonl"
{ cat "$tmp/ddp2.jsonl"; head -1 "$tmp/ddp2.jsonl"; } >"$tmp/tworuns.jsonl"
sed 's/"world": 2/"world": 0/' "$tmp/ddp2.jsonl" >"$tmp/world0.jsonl"
echo '{"hello": 1}' | cat "$tmp/ddp2.jsonl" - >"$tmp/other.jsonl"
bad 1 "^ddpc plot split: .*no-such\.jsonl" split -o "$tmp/bad.svg" "$tmp/ddp1.jsonl" "$tmp/no-such.jsonl"
bad 2 "^ddpc plot split: -o .*nodir/a\.svg: its folder .*nodir does not exist$" split -o "$tmp/nodir/a.svg" "$tmp/ddp1.jsonl"
bad 1 "^ddpc plot split: .*nosteps\.jsonl: no step lines$" split -o "$tmp/bad.svg" "$tmp/nosteps.jsonl"
bad 1 "^ddpc plot throughput: .*trunc\.jsonl:4: not a JSON object" throughput -o "$tmp/bad.svg" "$tmp/trunc.jsonl"
bad 1 "array\.jsonl:4: not a JSON object \(another JSON value\)" split -o "$tmp/bad.svg" "$tmp/array.jsonl"
bad 1 'short\.jsonl:3: "rank_step_ms" is not an array of 2 numbers' split -o "$tmp/bad.svg" "$tmp/short.jsonl"
bad 1 'str\.jsonl:3: "rank_optimizer_ms"\[0\] is not a number in \[0, 1e\+09\]' split -o "$tmp/bad.svg" "$tmp/str.jsonl"
# values whose sums overflow (they wrote NaN coordinates), a negative time, a step of 0 ms, absurd tokens
sed 's/"rank_step_ms": \[\([^],]*\),/"rank_step_ms": [1e308,/' "$tmp/ddp2.jsonl" >"$tmp/huge.jsonl"
sed 's/"rank_exposed_comm_ms": \[\([^],]*\),/"rank_exposed_comm_ms": [-5,/' "$tmp/ddp2.jsonl" >"$tmp/neg.jsonl"
sed 's/"step_ms": [0-9.e+-]*/"step_ms": 0/' "$tmp/ddp2.jsonl" >"$tmp/zero.jsonl"
sed 's/"tokens_per_step": [0-9.e+]*/"tokens_per_step": 1e308/' "$tmp/ddp2.jsonl" >"$tmp/tok.jsonl"
bad 1 'huge\.jsonl:3: "rank_step_ms"\[0\] is not a number in \[0, 1e\+09\]' split -o "$tmp/bad.svg" "$tmp/huge.jsonl"
bad 1 'neg\.jsonl:3: "rank_exposed_comm_ms"\[0\] is not a number in \[0, 1e\+09\]' split -o "$tmp/bad.svg" "$tmp/neg.jsonl"
bad 1 'zero\.jsonl:3: a step line without a number "step_ms" in \(0, 1e\+09\]' throughput -o "$tmp/bad.svg" "$tmp/zero.jsonl"
bad 1 'tok\.jsonl:1: the run line.s "tokens_per_step" is not a number in \(0, 1e\+15\]' throughput -o "$tmp/bad.svg" "$tmp/tok.jsonl"
bad 1 'old\.jsonl:2: a step line before the \{"event": "run"\} line' split -o "$tmp/bad.svg" "$tmp/old.jsonl"
bad 1 'tworuns\.jsonl:9: a second run line' split -o "$tmp/bad.svg" "$tmp/tworuns.jsonl"
bad 1 'world0\.jsonl:1: the run line.s "world" is not an integer in 1\.\.4096' throughput -o "$tmp/bad.svg" "$tmp/world0.jsonl"
bad 1 'other\.jsonl:9: neither a step line' split -o "$tmp/bad.svg" "$tmp/other.jsonl"
bad 1 "/dev/null" split -o "$tmp/bad.svg" /dev/null
bad 2 "^ddpc plot split: -o: no output given" split "$tmp/ddp1.jsonl"
bad 2 "^ddpc plot throughput: no metrics file given" throughput -o "$tmp/bad.svg"
bad 2 "^ddpc plot split: --label: 2 labels for 1 metrics file$" split -o "$tmp/bad.svg" --label a --label b "$tmp/ddp1.jsonl"
bad 2 "^ddpc plot split: --label: empty$" split -o "$tmp/bad.svg" --label "" "$tmp/ddp1.jsonl"
bad 2 "^ddpc plot split: unknown option '--bogus'" split -o "$tmp/bad.svg" --bogus "$tmp/ddp1.jsonl"
bad 2 "^ddpc plot: unknown plot; expected split, throughput or timeline" pie -o "$tmp/bad.svg" "$tmp/ddp1.jsonl"
bad 2 "^ddpc plot: no plot given" 
cp "$tmp/ddp1.jsonl" "$tmp/keep.jsonl"
bad 2 "^ddpc plot split: -o: .*ddp1\.jsonl is the same file as the metrics file" split -o "$tmp/ddp1.jsonl" "$tmp/ddp1.jsonl"
cmp -s "$tmp/ddp1.jsonl" "$tmp/keep.jsonl" || fail "plot -o INPUT changed the input"
"$DDPC" plot --help | grep -q '^usage: ddpc plot split' || fail "ddpc plot --help"
"$DDPC" plot split --help | grep -q '^usage: ddpc plot split' || fail "ddpc plot split --help"
"$DDPC" --help | grep -q 'ddpc plot split|throughput' || fail "ddpc --help does not list plot"
# (5) ddprun --bench plot (the other SVG writer, on base/svg.h too): an implementation name from its input
# is escaped, so the SVG stays well-formed
printf '%s\n' '{"kind": "allreduce", "impl": "a<b&c", "world": 2, "mb": 1, "ms": 0.2, "algbw_GBs": 5, "busbw_GBs": 5}' \
  '{"kind": "allreduce", "impl": "a<b&c", "world": 2, "mb": 10, "ms": 0.9, "algbw_GBs": 11, "busbw_GBs": 11}' >"$tmp/ar.jsonl"
"$DDPRUN" --bench plot -o "$tmp/ar.svg" "$tmp/ar.jsonl" >/dev/null || fail "ddprun --bench plot"
python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
assert 'a<b&c, 2 GPUs' in [t.firstChild.data for t in d.getElementsByTagName('text') if t.firstChild]" "$tmp/ar.svg" ||
  fail "ddprun --bench plot: the implementation name 'a<b&c' makes malformed SVG or is missing"
# a result with a value that is not a number, or absurd, or not JSON, is one line naming the file and line
for case in 'busbw_GBs": "x"' 'busbw_GBs": 1e308' 'mb": -1' 'world": 2.5'; do
  key=${case%%\"*}
  sed "2s/\"$key\": [^,}]*/\"$case/" "$tmp/ar.jsonl" >"$tmp/ar_bad.jsonl"
  rm -f "$tmp/ar_bad.svg"
  if "$DDPRUN" --bench plot -o "$tmp/ar_bad.svg" "$tmp/ar_bad.jsonl" >/dev/null 2>"$tmp/err"; then
    fail "--bench plot with $case: accepted"
  elif [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "ar_bad.jsonl:2: \"$key\" is not" "$tmp/err" && [ ! -e "$tmp/ar_bad.svg" ]; then
    echo "ok: --bench plot with $case: $(cat "$tmp/err")"
  else
    fail "--bench plot with $case: $(cat "$tmp/err")"
  fi
done
{ head -1 "$tmp/ar.jsonl"; echo '{"kind": "allreduce", "world": 2, "mb": 1'; } >"$tmp/ar_cut.jsonl"
if "$DDPRUN" --bench plot -o "$tmp/ar_cut.svg" "$tmp/ar_cut.jsonl" >/dev/null 2>"$tmp/err" ||
  ! grep -q 'ar_cut.jsonl:2: an all-reduce result that is not a JSON object' "$tmp/err"; then
  fail "--bench plot with a truncated line: $(cat "$tmp/err")"
fi
[ "$fail" = 0 ] && echo "ddpc plot: both plots match the metrics; bad input refused"
exit $fail
