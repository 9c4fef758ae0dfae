#!/usr/bin/env bash
# tests/e2e/test_plot_series.sh: `ddpc plot throughput` forms its series from the label AND the run's
# parallel kind (issue 13): hand-written metrics of one schedule file run as a 1F1B pipeline and as a
# sequential (model-parallel) pipeline on 2 and 3 workers, plus its 1-worker run, give two lines
# ("pp: pipeline 1f1b", "pp: pipeline sequential") that share the 1-worker point; a DDP run
# of another file is a third series named by its label alone. `ddpc plot split` takes a pipeline run's bubble
# (step - exposed - optimizer - forward - backward, from rank_forward_ms and rank_backward_ms) out of its
# compute; other runs have no bubble part.
. "$(dirname "$0")/lib.sh"
e2e_tmp plot_series
python3 - "$tmp" <<'PY' || die "writing the metrics"
import json, sys
d = sys.argv[1]
def run(name, sched, par, world, step_ms):
    with open(f"{d}/{name}.jsonl", "w") as f:
        f.write(json.dumps({"event": "run", "schedule": sched, "parallel": par, "world": world, "tokens_per_step": 1000,
                            "executor": "cuda"}) + "\n")
        for s in (1, 2, 3):
            f.write(json.dumps({"step": s, "step_ms": step_ms if s > 1 else 999.0, "warmup": s == 1,
                                "rank_step_ms": [step_ms] * world, "rank_exposed_comm_ms": [0.0] * world,
                                "rank_optimizer_ms": [1.0] * world, "rank_optimizer_comm_ms": [0.0] * world,
                                "rank_peak_mem_GiB": [1.0] * world,
                                **({"rank_forward_ms": [20.0 + r for r in range(world)], "rank_backward_ms": [30.0] * world}
                                   if par.startswith("pipeline") else {})}) + "\n")
run("single", "s/pp.lua", "single rank", 1, 100.0)
run("pipe2", "s/pp.lua", "pipeline stages=2 replicas=1 schedule=1f1b microbatches=8", 2, 62.5)
run("pipe3", "s/pp.lua", "pipeline stages=3 replicas=1 schedule=1f1b microbatches=8", 3, 50.0)
run("model2", "s/pp.lua", "pipeline stages=2 replicas=1 schedule=sequential microbatches=1", 2, 80.0)
run("model3", "s/pp.lua", "pipeline stages=3 replicas=1 schedule=sequential microbatches=1", 3, 100.0)
run("ddp2", "s/other.lua", "ddp ranks=2 sync=bucketed bucket_mb=25", 2, 40.0)
PY
"$DDPC" plot throughput -o "$tmp/thr.svg" "$tmp"/{pipe3,single,model2,ddp2,pipe2,model3}.jsonl >"$tmp/out" 2>&1 ||
  die "plot throughput: $(cat "$tmp/out")"
python3 - "$tmp" <<'PY' || fail "the series"
import sys, xml.dom.minidom as minidom
doc = minidom.parse(f"{sys.argv[1]}/thr.svg")
titles = [t.firstChild.data for t in doc.getElementsByTagName("title")]
texts = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild]
pp, seq = "pp: pipeline 1f1b", "pp: pipeline sequential"
for name in (pp, seq, "other"):
    assert name in texts, (name, texts)
want = {(pp, 1): 10000.0, (pp, 2): 16000.0, (pp, 3): 20000.0, (seq, 1): 10000.0, (seq, 2): 12500.0, (seq, 3): 10000.0,
        ("other", 2): 25000.0}
got = {}
for t in titles:
    for name in (pp, seq, "other"):
        if t.startswith(name + ": ") and " worker" in t:
            w = int(t[len(name) + 2:].split(" ")[0])
            got[(name, w)] = float(t.split(", ")[1].split(" ")[0])
assert got == want, got
lines = doc.getElementsByTagName("polyline")
assert sorted(len(l.getAttribute("points").split()) for l in lines) == [1, 3, 3], [l.getAttribute("points") for l in lines]
assert any(t.startswith(seq + " ideal: 10000.0 tokens/s per worker") for t in titles), titles
print("ok: throughput series by label and parallel kind")
PY
"$DDPC" plot split -o "$tmp/split.svg" "$tmp"/{single,pipe2,ddp2}.jsonl >"$tmp/out" 2>&1 || die "plot split: $(cat "$tmp/out")"
"$DDPC" plot split -o "$tmp/split_plain.svg" "$tmp"/{single,ddp2}.jsonl >"$tmp/out" 2>&1 || die "plot split: $(cat "$tmp/out")"
python3 - "$tmp" <<'PY' || fail "the pipeline bubble in the split"
import sys, xml.dom.minidom as minidom
d = sys.argv[1]
def parts(name):
    doc = minidom.parse(f"{d}/{name}")
    out = {}
    for t in doc.getElementsByTagName("title"):
        key, _, val = t.firstChild.data.rpartition(" ")[0].rpartition(" ")
        out[key] = float(val)
    legend = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild]
    return out, legend
p, legend = parts("split.svg")
# pipe2: step 62.5, optimizer 1, forward 20 + r, backward 30: bubble 11.5 - r, compute 50 + r
for r in (0, 1):
    assert abs(p[f"pp rank {r}: pipeline bubble"] - (11.5 - r)) < 1e-3, p
    assert abs(p[f"pp rank {r}: compute"] - (50 + r)) < 1e-3, p
assert "pp rank 0: pipeline bubble" in p and not any(k.startswith("other") and "bubble" in k for k in p), p
assert "pipeline bubble" in legend, legend
p, legend = parts("split_plain.svg")
assert not any("bubble" in k for k in p) and "pipeline bubble" not in legend, (p, legend)
print("ok: split: the pipeline bubble")
PY
exit $fail
