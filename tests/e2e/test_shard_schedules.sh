#!/usr/bin/env bash
# tests/e2e/test_shard_schedules.sh: sharding levels through ddpc. Each bad sharding schedule of
# tests/fixtures/schedules_bad/ (fsdp{} fields, ddp{shard=} combinations, units functions that leave a
# parameter out or name one twice) is refused with one line naming file:line and the field, a non-zero
# exit and no plan; the plan summary of the shipped zero2/fsdp schedules shows the shard level and, for
# zero3, the prefetch depths, resharding and gather dtype.
. "$(dirname "$0")/lib.sh"
e2e_tmp shard
bad="$DDP_SOURCE_DIR/tests/fixtures/schedules_bad"
# refused NAME PATTERN: ddpc on $bad/NAME.lua fails with one line matching "NAME.lua:<line>: PATTERN".
refused() {
  local name=$1 pattern=$2
  if "$DDPC" "$bad/$name.lua" -o "$tmp/$name.bin" >"$tmp/out" 2>"$tmp/err"; then fail "$name: compiled"; return; fi
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$lines" != 1 ]; then fail "$name: $lines lines on stderr: $(cat "$tmp/err")"; return; fi
  grep -qE -- "^$bad/$name\.lua:[0-9]+: $pattern" "$tmp/err" || { fail "$name: '$(cat "$tmp/err")' lacks /$pattern/"; return; }
  if ls "$tmp/$name.bin"* >/dev/null 2>&1; then fail "$name: left $(ls "$tmp/$name.bin"*)"; return; fi
  echo "ok: $name: $(cat "$tmp/err")"
}
refused units_missing 'parallel\.units left out the parameter "[^"]+" \(every parameter must be in exactly one unit\)'
refused units_dup 'parallel\.units returned the parameter "[^"]+" twice \(units 1 and 2\)'
refused fsdp_prefetch_neg 'parallel\.prefetch must be an integer >= 0, got -1'
refused fsdp_prefetch_str 'parallel\.prefetch must be an integer >= 0, got "two"'
refused fsdp_backward_neg 'parallel\.prefetch_backward must be an integer >= 0, got -2'
refused fsdp_prefetch_both 'parallel\.prefetch and parallel\.prefetch_forward cannot both be given'
refused fsdp_gather_bf16 'parallel\.gather_dtype may be "bf16" only with precision = "bf16"'
refused fsdp_reduce_dtype 'parallel\.reduce_dtype disagrees with grad_dtype = "fp32" at the top level'
refused fsdp_reduce_bf16 'parallel\.reduce_dtype may be "bf16" only with precision = "bf16"'
refused fsdp_unknown 'parallel\.reshard_after_forwad is not a field of fsdp\{\}'
refused fsdp_units_notfn 'parallel\.units must be a function'
refused fsdp_reshard_type 'parallel\.reshard_after_forward must be true or false'
refused fsdp_no_ranks 'parallel\.ranks is required'
refused zero2_naive 'parallel\.shard needs sync = "flat" or "bucketed" when it is "zero2"'
refused zero3_flat 'parallel\.shard needs sync = "bucketed" when it is "zero3"'
refused param_gather_zero3 'parallel\.param_gather may be "before_forward" only with shard = "zero1" or "zero2"'
refused master_group_zero3 'parallel\.master_group may be "last" only with shard = "zero1" or "zero2"'
refused param_gather_value 'parallel\.param_gather must be "after_update" or "before_forward", got "early"'
refused sharded_optimizer_overlap 'parallel\.optimizer_overlap cannot be combined with shard = "optimizer"'

# summary: the parallel line of `ddpc inspect`
summary() { # SCHEDULE EXPECTED_PARALLEL_LINE [--set ...]
  local s=$1 want=$2; shift 2
  "$DDPC" "$DDP_SOURCE_DIR/schedules/$s.lua" -o "$tmp/$s.bin" -q "$@" 2>"$tmp/$s.err" ||
    { fail "$s does not compile: $(cat "$tmp/$s.err")"; return; }
  local got; got=$("$DDPC" inspect "$tmp/$s.bin" | sed -n 's/^parallel  *//p')
  [ "$got" = "$want" ] || { fail "$s: parallel '$got', want '$want'"; return; }
  echo "ok: $s: $got"
}
summary tiny_zero2 "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward shard=zero2"
summary tiny_zero2 "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward optimizer_overlap shard=zero2" \
  --set parallel.optimizer_overlap=true
summary tiny_zero2 "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward optimizer_overlap shard=zero2 param_gather=before_forward" \
  --set parallel.optimizer_overlap=true --set parallel.param_gather=before_forward
summary tiny_zero2 "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward shard=zero2 reduce_scatter=alltoall" \
  --set nccl.reduce_scatter=alltoall
summary tiny_zero2 "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward shard=zero2 master_group=per_bucket" \
  --set parallel.master_group=per_bucket
summary tiny_fsdp "ddp ranks=2 sync=bucketed units=per-block overlap=backward shard=zero3 prefetch=1/1 reshard_after_forward=true gather=fp32"
summary tiny_fsdp "ddp ranks=2 sync=bucketed units=per-block overlap=backward shard=zero3 prefetch=2/0 reshard_after_forward=false gather=bf16" \
  --set precision=bf16 --set parallel.prefetch=nil --set parallel.prefetch_forward=2 --set parallel.prefetch_backward=0 \
  --set parallel.reshard_after_forward=false
summary toy_fsdp "ddp ranks=2 sync=bucketed units=lua overlap=backward shard=zero3 prefetch=0/0 reshard_after_forward=false gather=fp32"
summary tiny_ddp "ddp ranks=2 sync=bucketed bucket_mb=0.1 overlap=backward shard=zero3 prefetch=1/1 reshard_after_forward=true gather=fp32" \
  --set parallel.shard=zero3
# optimizer_overlap under ZeRO-2, in the compiled program: each group's update is an ADAMW on the update
# stream (2) issued during the backward (the first before the last reduce-scatter), and each group's
# all-gather follows its update on the communication stream
if "$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_zero2.lua" -o "$tmp/ovl.bin" -q --set parallel.optimizer_overlap=true; then
  "$DDPC" inspect "$tmp/ovl.bin" --rank 0 | sed -n '/^== program rank 0 step ==/,/^== kernels ==/p' >"$tmp/ovl.txt"
  if got=$(python3 - "$tmp/ovl.txt" <<'PY'
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r"^\s+\d+\s+\d+\s+\S", l)]
upd = sorted((int(r[0]), int(r[1])) for r in rows if r[2] == "kernel" and r[3] == "ADAMW")
rs = sorted((int(r[0]), int(r[1])) for r in rows if r[2] == "reduce_scatter")
ag = sorted((int(r[0]), int(r[1])) for r in rows if r[2] == "all_gather")
bad = []
if len(upd) != 6 or any(s != 2 for _, s in upd): bad.append(f"updates {upd}")
if not upd or not rs or upd[0][0] > rs[-1][0]: bad.append("no update before the last reduce-scatter")
if len(ag) != len(upd) or any(s != 1 or a <= u for (a, s), (u, _) in zip(ag, upd)): bad.append(f"all-gathers {ag}")
print("; ".join(bad) if bad else f"{len(upd)} updates on stream 2, the first at {upd[0][0]} before the last reduce-scatter at {rs[-1][0]}")
sys.exit(1 if bad else 0)
PY
  ); then echo "ok: tiny_zero2 optimizer_overlap: $got"; else fail "tiny_zero2 optimizer_overlap program: $got"; fi
else
  fail "tiny_zero2 with optimizer_overlap does not compile"
fi
exit $fail
