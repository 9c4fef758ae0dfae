#!/usr/bin/env bash
# tests/e2e/test_slurm.sh: a real one-node Slurm on this machine (issue 14). Starts munged (with a key it
# makes), slurmctld and slurmd (Debian's slurm-wlm 22.05) on free loopback ports with every file under the
# test's folder, waits (bounded) for the node to be idle, then on the reference executor:
#  - `srun -n 2` of a 2-rank DDP plan (toy_ddp) runs each rank once, over MPI (Open MPI through Slurm's
#    PMIx plugin, MpiDefault=pmix), and its checkpoint and losses equal the threads run byte for byte;
#  - `sbatch --wait -n 2` of a script that runs the same plan with srun, then with mpirun -n 2 (whose ranks
#    inherit the script's SLURM_PROCID=0): the same; the script runs ddprun without srun first, which must
#    refuse in one line (Slurm says 2 tasks, MPI sees 1);
#  - `srun -n 3` of the 2-rank plan and `srun -n 2` of a 1-rank plan: one line per rank naming both worlds,
#    non-zero.
# The daemons are stopped by their PIDs on exit. SKIP (77) only where Slurm or munge are not installed
# (.ci/setup installs slurm-wlm and munge).
. "$(dirname "$0")/lib.sh"
# ASan CI: Open MPI's libraries have no frame pointers, so LeakSanitizer needs the slow unwinder to see
# that what it reports at exit was allocated inside them (suppressed in .ci/lsan.supp).
[ -n "${LSAN_OPTIONS:-}" ] && export LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0"
for t in munged slurmctld slurmd srun sbatch sinfo mpirun python3; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed (apt-get install slurm-wlm munge openmpi-bin)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd must run as root here"; exit 77; }
e2e_tmp slurm
chmod 700 "$tmp"
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/"
for v in $(compgen -e | grep '^SLURM_\|^OMPI_\|^PMIX_'); do unset "$v"; done # not inside another job

pids=()
# slurmstepd processes of this cluster (a step whose launch failed can outlive slurmd): found by the
# SLURM_CONF in their environment, which names this test's folder.
stepds() {
  local d
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
    tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qx "SLURM_CONF=$tmp/slurm.conf" && echo "${d#/proc/}"
  done
}
stop_daemons() {
  local p
  pids+=($(stepds))
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do # bounded: SIGKILL after 10 s
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
}
trap stop_daemons EXIT

# munge: a fresh key, its own socket, pid, seed and log files
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/tmpfs" "$tmp/pmix"
chmod 700 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/key"
chmod 400 "$tmp/munge/key"
munged -F -f --key-file="$tmp/munge/key" -S "$tmp/munge/sock" --pid-file="$tmp/munge/pid" \
  --seed-file="$tmp/munge/seed" --log-file="$tmp/munge/log" >"$tmp/log/munged.out" 2>&1 &
pids+=($!)

read -r ctld_port d_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
export SLURM_CONF="$tmp/slurm.conf"
# CPUs=4 on a 2-core machine (config_overrides) so that srun -n 3 is scheduled rather than queued.
cat >"$SLURM_CONF" <<EOF
ClusterName=ddptest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmdParameters=config_overrides
TmpFS=$tmp/tmpfs
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=10 State=UP OverSubscribe=YES
EOF
# The PMIx plugin's per-step folders (spmix_appdir_UID_JOB.STEP) go under the test's folder: job ids restart
# at 1 in every fresh cluster, and a folder left in /tmp by an earlier run would make the step fail.
echo "PMIxCliTmpDirBase=$tmp/pmix" >"$tmp/mpi.conf"
for _ in $(seq 50); do [ -S "$tmp/munge/sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge/sock" ] || { cat "$tmp/munge/log" "$tmp/log/munged.out"; die "munged did not start"; }
slurmctld -D -i >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
idle=0
for _ in $(seq 60); do
  if timeout 5 sinfo -h -o '%T' 2>/dev/null | grep -qx idle; then idle=1; break; fi
  sleep 1
done
if [ $idle = 0 ]; then
  tail -5 "$tmp/log/slurmctld.out" "$tmp/log/slurmd.out"
  die "the Slurm node did not become idle within 60 s"
fi
echo "ok: slurm up: $(sinfo -h -o '%P %D %T %N')"

# the plans and the threads reference
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none # shared memory only
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/toy_ddp.bin" -q || die "toy_ddp does not compile"
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/toy1.bin" -q || die "toy does not compile"
"$DDPRUN" "$tmp/toy_ddp.bin" --device ref --metrics "$tmp/threads.jsonl" --checkpoint-dir "$tmp/threads" --quiet ||
  die "threads run failed"
losses() { grep -o '"loss": [^,]*' "$1"; }
same_as_threads() { # LABEL DIR METRICS OUT
  cmp "$(ckpt_latest "$tmp/threads")/model.safetensors" "$(ckpt_latest "$2")/model.safetensors" ||
    { fail "$1: model differs from the threads run"; return; }
  "$ST_COMPARE" "$(ckpt_latest "$tmp/threads")/model.safetensors" "$(ckpt_latest "$2")/model.safetensors" --rtol 0 --atol 0 >"$tmp/cmp" 2>&1 ||
    { fail "$1: st_compare: $(tail -2 "$tmp/cmp")"; return; }
  [ "$(losses "$tmp/threads.jsonl")" = "$(losses "$3")" ] || { fail "$1: losses differ"; return; }
  local n
  n=$(grep -c '^step ' "$4")
  [ "$n" = 5 ] || { fail "$1: $n progress lines for 5 steps (each process ran every rank?)"; return; }
  echo "ok: $1 == threads (checkpoint byte-identical, 5 losses equal)"
}

# srun -n 2
timeout 180 srun -n 2 -t 3 "$DDPRUN" "$tmp/toy_ddp.bin" --device ref --metrics "$tmp/srun.jsonl" \
  --checkpoint-dir "$tmp/srun" >"$tmp/srun.out" 2>&1 || { cat "$tmp/srun.out"; die "srun -n 2 failed"; }
grep -q 'rank 0 of 2 processes, MPI' "$tmp/srun.out" || fail "srun -n 2: the summary does not say rank 0 of 2 processes"
same_as_threads "srun -n 2" "$tmp/srun" "$tmp/srun.jsonl" "$tmp/srun.out"

# sbatch --wait: ddprun without srun is refused, with srun it runs
cat >"$tmp/job.sh" <<EOF
#!/bin/bash
"$DDPRUN" "$tmp/toy_ddp.bin" --device ref --quiet
echo "without srun: exit \$?"
srun "$DDPRUN" "$tmp/toy_ddp.bin" --device ref --metrics "$tmp/sbatch.jsonl" --checkpoint-dir "$tmp/sbatch"
mpirun --allow-run-as-root -n 2 "$DDPRUN" "$tmp/toy_ddp.bin" --device ref --metrics "$tmp/sbatch_mpirun.jsonl" \
  --checkpoint-dir "$tmp/sbatch_mpirun" >"$tmp/sbatch_mpirun.out" 2>&1
EOF
timeout 180 sbatch --wait -n 2 -t 3 -o "$tmp/sbatch.out" "$tmp/job.sh" >"$tmp/sbatch.submit" 2>&1 ||
  { cat "$tmp/sbatch.submit" "$tmp/sbatch.out"; die "sbatch --wait failed"; }
grep -q 'SLURM_NTASKS=2 (from slurm) but MPI sees rank 0 of 1' "$tmp/sbatch.out" ||
  { cat "$tmp/sbatch.out"; fail "sbatch: ddprun without srun was not refused in one line"; }
grep -q 'without srun: exit 1' "$tmp/sbatch.out" || fail "sbatch: ddprun without srun did not exit 1"
same_as_threads "sbatch -n 2 (srun inside)" "$tmp/sbatch" "$tmp/sbatch.jsonl" "$tmp/sbatch.out"
same_as_threads "sbatch -n 2 (mpirun inside)" "$tmp/sbatch_mpirun" "$tmp/sbatch_mpirun.jsonl" "$tmp/sbatch_mpirun.out"

# world mismatches
check_mismatch() { # NTASKS PLAN PLAN_RANKS
  if timeout 120 srun -n "$1" -t 2 "$DDPRUN" "$tmp/$2.bin" --device ref --quiet >"$tmp/mm.out" 2>&1; then
    fail "srun -n $1 of a $3-rank plan exited 0"
    return
  fi
  [ "$(grep -c "compiled for $3 rank.*launched with $1 (SLURM_NTASKS=$1, rank" "$tmp/mm.out")" = "$1" ] ||
    { cat "$tmp/mm.out"; fail "srun -n $1 of a $3-rank plan: not one line per rank naming both worlds"; return; }
  echo "ok: refused: $(grep -m1 'compiled for' "$tmp/mm.out")"
}
check_mismatch 3 toy_ddp 2
check_mismatch 2 toy1 1
exit $fail
