#!/usr/bin/env bash
# tests/e2e/test_trace.sh: --trace writes one Chrome trace-event JSON per rank with a track per stream, the
# plan's instructions as spans (layer ops on compute, bucket all-reduces on comm) and valid JSON; each span's
# category ("compute", "communication", "timer", "other") says what it is.
. "$(dirname "$0")/lib.sh"
e2e_tmp trace
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/plan.bin" -q || exit 1
"$DDPRUN" "$tmp/plan.bin" --device ref --trace "$tmp/t.json" --quiet || exit 1
python3 - "$tmp" <<'PY' || exit 1
import json, sys
for r in (0, 1):
    d = json.load(open(f"{sys.argv[1]}/t.rank{r}.json"))
    ev = d["traceEvents"]
    names = {(e.get("tid"), e["name"]) for e in ev if e.get("ph") == "X"}
    tracks = {e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    assert {"compute stream", "communication stream"} <= tracks, tracks
    assert (0, "fc1") in names and (0, "fc3.dW") in names, sorted(names)[:10]
    assert any(t == 1 and n.startswith("all_reduce.bucket") for t, n in names), names
    assert all(e["dur"] >= 0 for e in ev if e.get("ph") == "X")
    # each span's category says what it is: the batch's load is not communication, the all-reduces are
    cat = {}
    for e in ev:
        if e.get("ph") in ("X", "i") and e.get("cat") != "range":
            cat.setdefault(e["args"]["opcode"], set()).add(e["cat"])
    assert cat.get("load_batch") == {"other"}, cat
    assert cat.get("all_reduce") == {"communication"}, cat
    assert cat.get("gemm") == {"compute"} and cat.get("timer") == {"timer"}, cat
print("traces ok")
PY
