#!/usr/bin/env bash
# tests/e2e/test_mpi_p2p.sh: SEND/RECV of the reference executor with ranks as processes under Open MPI's
# mpirun (issue 13; test_mpi.sh does the collectives and whole plans):
#  - test_p2p_mpi under `mpirun -n 3` and `-n 2`: the hand-built p2p plans (ring, pairwise exchange in one
#    group, FIFO messages between one pair; f32 and bf16) give every rank the expected bytes, equal to the
#    threads run in the same process; a dtype mismatch fails both ranks with the threads backend's line;
#  - `--deadlock` (both ranks SEND first in groups of their own, DDP_MPI_TIMEOUT_S=1): each rank fails with
#    the timeout line naming its SEND and the job ends (no hang);
#  - through ddprun (the dispatcher): the synthetic fixture plan (2 ranks, one grouped exchange) runs as
#    threads and under `mpirun -n 2` with byte-identical checkpoints and losses (the dispatcher path; the
#    exchanged buffer is not checkpointed: test_p2p_mpi checks moved bytes); the same plan with the
#    exchange ungrouped (the reader accepts it) fails: threads at once with the deadlock line, processes
#    after DDP_MPI_TIMEOUT_S with the timeout line; neither hangs.
# SKIP (77) only where Open MPI is not installed (.ci/setup installs openmpi-bin and libopenmpi-dev).
. "$(dirname "$0")/lib.sh"
[ -n "${LSAN_OPTIONS:-}" ] && export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0" # see test_mpi.sh
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (apt-get install openmpi-bin)"; exit 77; }
[ -n "${TEST_P2P_MPI:-}" ] || die "TEST_P2P_MPI is not set (the test_p2p_mpi binary)"
e2e_tmp mpi_p2p
MPIRUN=(timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)

for n in 3 2; do
  "${MPIRUN[@]}" -n $n "$TEST_P2P_MPI" >"$tmp/p2p$n.out" 2>&1 || { cat "$tmp/p2p$n.out"; die "mpirun -n $n test_p2p_mpi failed"; }
  [ "$(grep -c ', 0 failed' "$tmp/p2p$n.out")" = $n ] || { cat "$tmp/p2p$n.out"; die "test_p2p_mpi: not $n clean ranks"; }
  [ "$(grep -c 'processes == threads == expected' "$tmp/p2p$n.out")" = $((3 * n)) ] ||
    { cat "$tmp/p2p$n.out"; die "test_p2p_mpi -n $n: not 3 cases on every rank"; }
  echo "ok: mpirun -n $n: ring, exchange, fifo: processes == threads ($(grep -c 'point-to-point mismatch' "$tmp/p2p$n.out") mismatch lines)"
done

start=$SECONDS
DDP_MPI_TIMEOUT_S=1 "${MPIRUN[@]}" -n 2 "$TEST_P2P_MPI" --deadlock >"$tmp/deadlock.out" 2>&1
rc=$?
if [ $rc = 0 ] || [ $rc = 124 ]; then
  cat "$tmp/deadlock.out"; fail "ungrouped exchange: exit $rc (0: not detected, 124: hung)"
elif ! grep -q 'step instruction 0 (send "pp.send.act.mb0", 64 x f32 to rank [01]) waited more than 1 s for rank [01].s matching receive' "$tmp/deadlock.out"; then
  cat "$tmp/deadlock.out"; fail "ungrouped exchange: no timeout line"
elif ! grep -q 'deadlock rank [01]: [0-9]* passed, 0 failed' "$tmp/deadlock.out"; then
  cat "$tmp/deadlock.out"; fail "ungrouped exchange: a rank's checks failed"
elif [ $((SECONDS - start)) -ge 60 ]; then
  fail "ungrouped exchange: took $((SECONDS - start)) s"
else
  echo "ok: ungrouped exchange: $(grep -m1 'waited more than' "$tmp/deadlock.out") (exit $rc)"
fi

# whole plans through ddprun
"$TEST_P2P_MPI" --write-plans "$tmp" || die "test_p2p_mpi --write-plans failed"
"$DDPRUN" "$tmp/exchange.bin" --device ref --steps 3 --metrics "$tmp/t.jsonl" --checkpoint-dir "$tmp/t.ckpt" \
  >"$tmp/t.out" 2>&1 || { cat "$tmp/t.out"; die "exchange.bin: threads run failed"; }
"${MPIRUN[@]}" -n 2 "$DDPRUN" "$tmp/exchange.bin" --device ref --steps 3 --metrics "$tmp/m.jsonl" \
  --checkpoint-dir "$tmp/m.ckpt" >"$tmp/m.out" 2>&1 || { cat "$tmp/m.out"; die "exchange.bin: mpirun -n 2 failed"; }
same=0
for f in "$tmp"/t.ckpt/step-000003/*; do
  cmp -s "$f" "$tmp/m.ckpt/step-000003/$(basename "$f")" && same=$((same + 1)) || fail "exchange.bin: $(basename "$f") differs"
done
[ "$(grep -o '"loss": [^,]*' "$tmp/t.jsonl")" = "$(grep -o '"loss": [^,]*' "$tmp/m.jsonl")" ] || fail "exchange.bin: losses differ"
[ $same -ge 2 ] && echo "ok: exchange.bin: ddprun threads == mpirun -n 2 ($same checkpoint files byte-identical)"
start=$SECONDS
timeout 60 "$DDPRUN" "$tmp/ungrouped.bin" --device ref --steps 2 >"$tmp/u.out" 2>&1
rc=$?
if [ $rc != 1 ] || [ "$(wc -l <"$tmp/u.out")" != 1 ] ||
  ! grep -q '^ddprun: rank 0: point-to-point deadlock, no rank can move: rank 0 step instruction [0-9]* (send, 16 x f32 to rank 1) waits (group of 1); rank 1 ' "$tmp/u.out"; then
  cat "$tmp/u.out"; fail "ungrouped.bin, threads: exit $rc, not the one deadlock line"
else
  echo "ok: ungrouped.bin, threads: exit 1 in $((SECONDS - start)) s: $(cat "$tmp/u.out")"
fi
DDP_MPI_TIMEOUT_S=1 "${MPIRUN[@]}" -n 2 "$DDPRUN" "$tmp/ungrouped.bin" --device ref --steps 2 >"$tmp/um.out" 2>&1
rc=$?
if [ $rc = 0 ] || [ $rc = 124 ] || ! grep -q 'waited more than 1 s for rank [01].s matching receive' "$tmp/um.out"; then
  cat "$tmp/um.out"; fail "ungrouped.bin, mpirun -n 2: exit $rc (0: not detected, 124: hung), or no timeout line"
else
  echo "ok: ungrouped.bin, mpirun -n 2: exit $rc: $(grep -m1 'waited more than' "$tmp/um.out")"
fi
exit $fail
