#!/usr/bin/env bash
# tests/e2e/test_global_loss.sh: the metrics' `loss` is the global-batch mean (issue 14): ToyModel on 2 ranks
# (10 rows each) reports the same loss as on 1 rank with the same 20 rows, step by step; `loss_rank0` of
# the 2-rank run is rank 0's own mean (it differs), and on 1 rank equals `loss`.
. "$(dirname "$0")/lib.sh"
e2e_tmp global_loss
for s in toy toy_ddp; do
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$s.lua" -o "$tmp/$s.bin" -q || die "$s does not compile"
  "$DDPRUN" "$tmp/$s.bin" --device ref --metrics "$tmp/$s.jsonl" --quiet || die "$s run"
done
python3 - "$tmp/toy.jsonl" "$tmp/toy_ddp.jsonl" <<'PY' || fail "losses"
import json, sys
one, two = ([json.loads(l) for l in open(p) if '"step"' in l] for p in sys.argv[1:])
assert len(one) == len(two) == 5, (len(one), len(two))
for a, b in zip(one, two):
    assert abs(a["loss"] - b["loss"]) <= 1e-6 * abs(a["loss"]), f"step {a['step']}: 1 rank {a['loss']}, 2 ranks {b['loss']}"
    assert a["loss_rank0"] == a["loss"], f"step {a['step']}: 1 rank: loss_rank0 {a['loss_rank0']} != loss {a['loss']}"
    assert abs(b["loss_rank0"] - b["loss"]) > 1e-3, f"step {b['step']}: 2 ranks: loss_rank0 equals the global loss"
    print(f"step {a['step']}: 1 rank {a['loss']}, 2 ranks {b['loss']} (rank 0 alone {b['loss_rank0']})")
PY
[ "$fail" = 0 ] && echo "the 2-rank loss is the global loss"
exit $fail
