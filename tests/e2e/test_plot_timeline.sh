#!/usr/bin/env bash
# tests/e2e/test_plot_timeline.sh: `ddpc plot timeline` (issue 13) and what ddprun --trace gives it. (1) ddprun's
# traces (reference executor, tiny_ddp on 2 ranks) carry the parallel layout, world and range spans (with
# their kind), and the timeline of them reports forward, backward and optimizer time equal to those ranges
# and no pipeline formula; (2) hand-written pipeline traces (GPipe, p=2, m=2, forward 1 ms, backward 2 ms)
# give exact times, bubble 1/3 measured and (p-1)/(m+p-1) = 1/3 predicted, and a well-formed SVG with a row
# per worker and a box per microbatch; zero-bubble and interleaved traces give their formulas and count
# the weight-gradient ranges as backward; (3) bad traces are one line, exit 1 (bad command line: 2), and no
# SVG.
. "$(dirname "$0")/lib.sh"
e2e_tmp plot_timeline

# (1) ddprun's traces
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_ddp.lua" -o "$tmp/ddp.bin" -q --set steps=2 || die "tiny_ddp"
"$DDPRUN" "$tmp/ddp.bin" --device ref --trace "$tmp/ddp.json" --quiet || die "tiny_ddp run"
"$DDPC" plot timeline -o "$tmp/ddp.svg" "$tmp/ddp.rank1.json" "$tmp/ddp.rank0.json" >"$tmp/ddp.out" 2>&1 ||
  fail "timeline of tiny_ddp: $(cat "$tmp/ddp.out")"
python3 - "$tmp" <<'PY' || fail "the timeline of ddprun's traces"
import json, sys
d = sys.argv[1]
out = [json.loads(l) for l in open(f"{d}/ddp.out") if l.startswith("{")]
assert open(f"{d}/ddp.out").read().rstrip().endswith(f"wrote {d}/ddp.svg (2 workers)")
for r in (0, 1):
    t = json.load(open(f"{d}/ddp.rank{r}.json"))
    od = t["otherData"]
    assert od["rank"] == r and od["world"] == 2 and od["parallel"].startswith("ddp"), od
    assert "pipe_stages" not in od, od
    ranges = {e["args"]["kind"]: e for e in t["traceEvents"] if e.get("cat") == "range"}
    assert {"step", "forward", "backward", "optimizer", "layer"} <= set(ranges), sorted(ranges)
    w = out[r]
    assert w["worker"] == r and w["stage"] is None, w
    for k in ("forward", "backward", "optimizer"):
        want = ranges[k]["dur"] / 1e3
        assert abs(w[k + "_ms"] - want) < 2e-3, (r, k, w[k + "_ms"], want)
    slow = max(o["step_ms"] for o in out[:2])
    busy = w["forward_ms"] + w["backward_ms"] + w["optimizer_ms"]
    assert abs(w["idle_ms"] - (slow - busy)) < 5e-3 and w["sendrecv_ms"] == 0, w
summary = out[2]
assert summary["event"] == "timeline" and summary["bubble_formula"] is None and summary["workers"] == 2, summary
assert all(summary[k] is None for k in ("schedule", "stages", "microbatches", "virtual_stages", "formula")), summary
print("ok: ddprun traces: ranges, meta, times")
PY

# (2) hand-written pipeline traces
cat >"$tmp/gen.py" <<'PY'
import json, sys
def trace(path, rank, meta, spans, instants, extra=()):
    ev = [{"ph": "M", "pid": rank, "name": "process_name", "args": {"name": f"rank {rank}"}}]
    for name, t0, t1 in spans:
        p2p = name.startswith(("pp.send", "pp.recv"))
        kind = "optimizer" if name == "optimizer" else "forward" if ".fwd." in name else "backward"
        ev.append({"ph": "X", "pid": rank, "tid": 1 if p2p else 0, "ts": t0 * 1e3, "dur": (t1 - t0) * 1e3, "name": name,
                   "cat": "communication" if p2p else "range", "args": {} if p2p else {"kind": kind}})
    for name, t0, t1, kind in extra:
        ev.append({"ph": "X", "pid": rank, "tid": 0, "ts": t0 * 1e3, "dur": (t1 - t0) * 1e3, "name": name, "cat": "range",
                   "args": {"kind": kind}})
    ev += [{"ph": "i", "pid": rank, "tid": 0, "ts": t * 1e3, "s": "t", "name": n} for n, t in instants]
    od = {"schedule": "pp.lua", "parallel": "pipeline", "step": 3, "rank": rank, "world": 2}
    od.update(meta)
    json.dump({"displayTimeUnit": "ms", "otherData": od, "traceEvents": ev}, open(path, "w"))
d, sched, m, v = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
meta = {"pipe_schedule": sched, "pipe_stages": 2, "pipe_replicas": 1, "pipe_microbatches": m, "pipe_virtual": v}
bw = [("pp.bwdw.mb0.chunk0", 4, 4.5)] if sched == "zero_bubble" else []
o = 100  # rank 0's clock starts elsewhere: rows are aligned at step_begin
trace(f"{d}/{sched}.rank0.json", 0, meta,
      [("pp.fwd.mb0.chunk0", o + 0, o + 1), ("pp.send.act.mb0", o + 1, o + 1.25), ("pp.fwd.mb1.chunk0", o + 1, o + 2),
       ("pp.send.act.mb1", o + 2, o + 2.25), ("pp.recv.grad.mb1", o + 2, o + 5), ("pp.bwd.mb1.chunk0", o + 5, o + 7),
       ("pp.recv.grad.mb0", o + 5, o + 7), ("pp.bwd.mb0.chunk0", o + 7, o + 9), ("optimizer", o + 9, o + 10)]
      + [(n, o + a, o + b) for n, a, b in bw],
      [("step_begin", o), ("forward_end", o + 2), ("step_end", o + 10)],
      [("step", o - 0.5, o + 10.5, "step"), ("forward", o, o + 2, "forward")])
trace(f"{d}/{sched}.rank1.json", 1, meta,
      [("pp.recv.act.mb0", 0, 1), ("pp.fwd.mb0.chunk1", 1, 2), ("pp.recv.act.mb1", 1, 2), ("pp.fwd.mb1.chunk1", 2, 3),
       ("pp.bwd.mb1.chunk1", 3, 5), ("pp.send.grad.mb1", 5, 5.5), ("pp.bwd.mb0.chunk1", 5, 7),
       ("pp.send.grad.mb0", 7, 7.5), ("optimizer", 7, 8)],
      [("step_begin", 0), ("step_end", 8)])
PY
python3 "$tmp/gen.py" "$tmp" gpipe 2 1 && python3 "$tmp/gen.py" "$tmp" zero_bubble 4 1 &&
  python3 "$tmp/gen.py" "$tmp" interleaved 4 2 && python3 "$tmp/gen.py" "$tmp" 1f1b 8 1 &&
  python3 "$tmp/gen.py" "$tmp" sequential 2 1 || die "writing the hand-made traces"
for s in gpipe zero_bubble interleaved 1f1b sequential; do
  "$DDPC" plot timeline -o "$tmp/$s.svg" "$tmp/$s.rank1.json" "$tmp/$s.rank0.json" >"$tmp/$s.out" 2>&1 ||
    fail "timeline $s: $(cat "$tmp/$s.out")"
done
python3 - "$tmp" <<'PY' || fail "the hand-made pipeline traces"
import json, sys, xml.dom.minidom as minidom
d = sys.argv[1]
def lines(s):
    return [json.loads(l) for l in open(f"{d}/{s}.out") if l.startswith("{")]
g = lines("gpipe")
want = {0: dict(step_ms=10, slowest_step_ms=10, forward_ms=2, backward_ms=4, sendrecv_ms=5.25, optimizer_ms=1, idle_ms=3),
        1: dict(step_ms=8, slowest_step_ms=10, forward_ms=2, backward_ms=4, sendrecv_ms=3, optimizer_ms=1, idle_ms=3)}
for r in (0, 1):
    assert g[r]["worker"] == r and g[r]["stage"] == r, g[r]
    for k, v in want[r].items():
        assert abs(g[r][k] - v) < 1e-9, (r, k, g[r][k], v)
    assert abs(g[r]["bubble"] - 3 / 9) < 1e-4, g[r]
s = g[2]
assert s["schedule"] == "gpipe" and s["stages"] == 2 and s["microbatches"] == 2 and s["virtual_stages"] == 1, s
assert abs(s["bubble_measured"] - 1 / 3) < 1e-4 and abs(s["bubble_formula"] - 1 / 3) < 1e-4, s
assert s["formula"] == "(p-1)/(m+p-1)", s
# zero bubble with the trace's mean F 1, B 2, W 0.5 ms: (p-1)(F+B-W) / (m(F+B+W) + (p-1)(F+B-W)), m 4
for sched, f in (("zero_bubble", 2.5 / 16.5), ("interleaved", 1 / 9), ("1f1b", 1 / 9), ("sequential", 1 / 2)):
    s = lines(sched)[2]
    assert abs(s["bubble_formula"] - f) < 1e-4, (sched, s)
assert lines("zero_bubble")[2]["formula"].startswith("(p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W))"), lines("zero_bubble")[2]
zb = lines("zero_bubble")[0]
assert abs(zb["backward_ms"] - 4.5) < 1e-9 and abs(zb["idle_ms"] - 2.5) < 1e-9, zb
doc = minidom.parse(f"{d}/gpipe.svg")
texts = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild]
assert "worker 0 (stage 0)" in texts and "worker 1 (stage 1)" in texts, texts
titles = [t.firstChild.data for t in doc.getElementsByTagName("title")]
assert any(t.startswith("pp.fwd.mb1.chunk0: 1.000 .. 2.000 ms") for t in titles), titles
assert any(t.startswith("pp.recv.act.mb0: 0.000 .. 1.000 ms") for t in titles), titles
assert sum(t.startswith("pp.") for t in titles) == 16, titles  # 8 + 8 spans, the whole "forward" range not a box
assert "1.0" in [t.firstChild.data for t in minidom.parse(f"{d}/interleaved.svg").getElementsByTagName("text") if t.firstChild]
print("ok: hand-made pipeline traces")
PY

# (3) bad input: one line, exit 1 (2 for a bad command line), no SVG
printf 'not json' >"$tmp/bad_json.json"
echo '{"otherData": {"rank": 0}}' >"$tmp/no_events.json"
echo '{"traceEvents": []}' >"$tmp/no_rank.json"
echo '{"otherData": {"rank": 0, "world": 1}, "traceEvents": []}' >"$tmp/empty.json"
echo '{"otherData": {"rank": 0, "world": 1}, "traceEvents": [{"ph": "X", "ts": 1, "dur": -2, "name": "x"}]}' >"$tmp/neg.json"
echo '{"otherData": {"rank": 0, "world": 1}, "traceEvents": [7]}' >"$tmp/notobj.json"
sed 's/"pipe_schedule": "gpipe"/"pipe_schedule": "<b>"/' "$tmp/gpipe.rank0.json" >"$tmp/badsched.json"
sed 's/"pipe_microbatches": 2/"pipe_microbatches": 0/' "$tmp/gpipe.rank0.json" >"$tmp/badm.json"
check_bad() { # EXPECTED_RC PATTERN ARGS...
  local want=$1 pat=$2
  shift 2
  "$DDPC" plot timeline -o "$tmp/bad.svg" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "timeline $*: exit $rc, expected $want ($(cat "$tmp/bad.err"))"
  [ "$(wc -l <"$tmp/bad.err")" = 1 ] && grep -q -- "$pat" "$tmp/bad.err" || fail "timeline $*: said: $(cat "$tmp/bad.err")"
  [ ! -e "$tmp/bad.svg" ] || fail "timeline $*: wrote the SVG"
  [ ! -s "$tmp/bad.out" ] || fail "timeline $*: printed $(cat "$tmp/bad.out")"
  rm -f "$tmp/bad.svg"
}
check_bad 1 "missing.json" "$tmp/missing.json"
check_bad 1 "bad_json.json:1: not JSON" "$tmp/bad_json.json"
printf '{"traceEvents": ["\\\n"]}' >"$tmp/escape_nl.json" # a bad escape before a newline: jansson quotes it
check_bad 1 "escape_nl.json:2: not JSON (invalid escape near" "$tmp/escape_nl.json"
check_bad 1 'no "traceEvents" array' "$tmp/no_events.json"
check_bad 1 '"rank"' "$tmp/no_rank.json"
check_bad 1 "no timed spans" "$tmp/empty.json"
check_bad 1 'traceEvents\[0\] ("x") has no "dur" >= 0' "$tmp/neg.json"
check_bad 1 "traceEvents\[0\] is not an object" "$tmp/notobj.json"
check_bad 1 '"pipe_schedule" is not one of' "$tmp/badsched.json"
check_bad 1 '"pipe_microbatches" is not a positive integer' "$tmp/badm.json"
check_bad 1 "two trace files of rank 0" "$tmp/gpipe.rank0.json" "$tmp/gpipe.rank0.json"
check_bad 1 "come from different plans" "$tmp/gpipe.rank0.json" "$tmp/1f1b.rank1.json"
check_bad 1 "come from different plans" "$tmp/gpipe.rank0.json" "$tmp/ddp.rank1.json"
# one worker of two: its slowest step, idle and bubble would be of that worker alone
check_bad 1 "traces of 1 of the plan's 2 ranks: rank 0 is missing (give one per rank)$" "$tmp/ddp.rank1.json"
check_bad 1 "traces of 1 of the plan's 2 ranks: rank 1 is missing (give one per rank)$" "$tmp/ddp.rank0.json"
# a rank outside its trace's world, and no world at all
echo '{"otherData": {"rank": 5, "world": 2}, "traceEvents": []}' >"$tmp/rank5.json"
echo '{"otherData": {"rank": 0}, "traceEvents": []}' >"$tmp/noworld.json"
check_bad 1 '"otherData"."world" is not an integer in 6\.\.4096 (above the rank 5)' "$tmp/rank5.json"
check_bad 1 '"otherData"."world" is not an integer in 1\.\.4096' "$tmp/noworld.json"
check_bad 2 "no trace file given"
check_bad 2 "--label: not for the timeline" --label x "$tmp/gpipe.rank0.json"
"$DDPC" plot timeline -o "$tmp/gpipe.rank0.json" "$tmp/gpipe.rank0.json" >/dev/null 2>&1
[ $? = 2 ] || fail "timeline: -o one of the inputs was accepted"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/gpipe.rank0.json" || fail "the input was overwritten"
"$DDPC" plot --help | grep -q "ddpc plot timeline -o FILE.svg TRACE.json" || fail "plot --help lacks the timeline"
[ $fail = 0 ] && echo "plot timeline ok"
exit $fail
