# tests/e2e/lib.sh (sourced by every tests/e2e/*.sh): what the end-to-end tests share. `e2e_tmp NAME`
# makes the scratch folder $tmp; `fail MSG` prints "FAIL: MSG" and marks the test failed (a test ends with
# `exit $fail`), `die MSG` does so and exits at once; `write` and `same` build, run and compare the
# generated DDP schedules of test_ddp_equivalence.sh (reference executor) and gpu_ddp.sh (GPUs); `losses`,
# `files`, `same_names`, `resume_halves`, `resume_equal` and `mpi_same` compare runs of the layout tests
# (pipelines, replicas, tensor parallelism) whose progress is in $tmp/NAME.out and checkpoints in
# $tmp/NAME.ckpt.
set -u
fail=0

# e2e_tmp NAME: $tmp = $DDP_TEST_TMP/NAME, empty.
e2e_tmp() {
  tmp="$DDP_TEST_TMP/$1"
  rm -rf "$tmp"
  mkdir -p "$tmp"
}

fail() {
  echo "FAIL: $*"
  fail=1
}

die() {
  echo "FAIL: $*"
  exit 1
}

# refused NAME PATTERN: `ddpc $tmp/NAME.lua -o $tmp/NAME.bin` must fail with one line on stderr matching the
# extended regular expression PATTERN and leave no plan behind; prints "ok: NAME: <the line>".
refused() {
  if "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q 2>"$tmp/err"; then fail "$1: compiled"; return; fi
  local lines; lines=$(wc -l <"$tmp/err")
  [ "$lines" = 1 ] || { fail "$1: $lines lines: $(cat "$tmp/err")"; return; }
  grep -qE -- "$2" "$tmp/err" || { fail "$1: '$(cat "$tmp/err")' lacks /$2/"; return; }
  [ -e "$tmp/$1.bin" ] && { fail "$1: left a plan"; return; }
  echo "ok: $1: $(cat "$tmp/err")"
}

# write NAME MODEL RANKS PARALLEL_EXTRA OPTIMIZER STEPS DATA: $tmp/NAME.lua (models.lua must be in $tmp),
# compiled to $tmp/NAME.bin and run with its checkpoint in $tmp/NAME.ckpt: on the reference executor
# (ranks as threads) when E2E_DEVICE=ref, else on GPUs with --nproc RANKS. Returns non-zero on failure.
write() {
  local par run
  if [ "$3" = 1 ]; then par="single()"; else par="ddp { ranks = $3 $4 }"; fi
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule { model = $2, data = $7, precision = "fp32", optimizer = $5,
                  parallel = $par, steps = $6, seed = 3 }
LUA
  if [ "${E2E_DEVICE:-}" = ref ]; then run=(--device ref); else run=(--nproc "$3"); fi
  "$DDPC" "$tmp/$1.lua" -o "$tmp/$1.bin" -q || { fail "$1 does not compile"; return 1; }
  "$DDPRUN" "$tmp/$1.bin" "${run[@]}" --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1 run"; return 1; }
}

# ckpt_latest DIR: the newest complete step folder of a checkpoint folder (DIR/step-NNNNNN, named by
# DIR/latest; runtime/io/checkpoint.h).
ckpt_latest() {
  local name
  name=$(cat "$1/latest" 2>/dev/null) || { echo "$1/no-latest"; return 1; }
  echo "$1/$name"
}

# same NAME BASELINE RTOL ATOL [MESSAGE]: the two runs' model checkpoints agree (st_compare); MESSAGE is
# printed as well on success.
same() {
  if "$ST_COMPARE" "$(ckpt_latest "$tmp/$1.ckpt")/model.safetensors" "$(ckpt_latest "$tmp/$2.ckpt")/model.safetensors" \
    --rtol "$3" --atol "$4" \
    >"$tmp/cmp" 2>&1; then
    echo "ok: $1 == $2 ($(tail -1 "$tmp/cmp"))"
    [ -n "${5:-}" ] && echo "$5"
    return 0
  fi
  fail "$1 != $2: $(tail -3 "$tmp/cmp")"
}

# losses NAME BASE TOL: the step losses printed in $tmp/NAME.out and $tmp/BASE.out agree within TOL
# (relative); a NaN or a missing step fails.
losses() {
  python3 - "$tmp/$1.out" "$tmp/$2.out" "$3" <<'PY' || { fail "$1 losses != $2: $(cat "$tmp/loss.err")"; return 1; }
import re, sys
def steps(f):
    return [float(m.group(1)) for m in re.finditer(r"^step\s+\d+\s+loss\s+(\S+)", open(f).read(), re.M)]
a, b, tol = steps(sys.argv[1]), steps(sys.argv[2]), float(sys.argv[3])
if not a or len(a) != len(b) or any(x != x or abs(x - y) > tol * max(1.0, abs(y)) for x, y in zip(a, b)):
    open(sys.argv[1].rsplit("/", 1)[0] + "/loss.err", "w").write(f"{a} vs {b}")
    sys.exit(1)
PY
  echo "ok: $1 losses == $2"
}

# files NAME BASE FILE RTOL ATOL: FILE.safetensors of the two runs' last checkpoints agree (st_compare).
files() {
  "$ST_COMPARE" "$(ckpt_latest "$tmp/$2.ckpt")/$3.safetensors" "$(ckpt_latest "$tmp/$1.ckpt")/$3.safetensors" \
    --rtol "$4" --atol "$5" >"$tmp/cmp" 2>&1 || { fail "$1 $3 != $2: $(tail -2 "$tmp/cmp")"; return 1; }
  echo "ok: $1 $3 == $2 ($(tail -1 "$tmp/cmp"))"
}

# same_names NAME BASE FILE...: each FILE.safetensors of NAME's last checkpoint has BASE's tensor names,
# dtypes and shapes (a layout's checkpoint reads as one rank's).
same_names() {
  local a b f
  a=$(ckpt_latest "$tmp/$1.ckpt") b=$(ckpt_latest "$tmp/$2.ckpt")
  shift 2
  for f in "$@"; do
    python3 - "$a/$f.safetensors" "$b/$f.safetensors" <<'PY' || { fail "$f.safetensors names or shapes differ from one rank's"; return 1; }
import json, struct, sys
def header(f):
    b = open(f, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return {k: (v["dtype"], v["shape"]) for k, v in json.loads(b[8:8 + n]).items() if k != "__metadata__"}
sys.exit(0 if header(sys.argv[1]) == header(sys.argv[2]) else 1)
PY
  done
}

# resume_halves NAME FROM TO: 2 steps of $tmp/FROM.bin, then $tmp/TO.bin resumed from that checkpoint
# ($tmp/NAME.ckpt) up to step 4, on the reference executor.
resume_halves() {
  "$DDPRUN" "$tmp/$2.bin" --device ref --steps 2 --checkpoint-dir "$tmp/$1.ckpt" --quiet || { fail "$1: first half"; return 1; }
  "$DDPRUN" "$tmp/$3.bin" --device ref --steps 4 --checkpoint-dir "$tmp/$1.ckpt" --resume --quiet || { fail "$1: resume"; return 1; }
}

# resume_equal NAME FROM TO STRAIGHT: resume_halves, then the model (1e-5 / 1e-6) and the optimizer state
# (1e-5 / 1e-7) equal the straight run STRAIGHT's.
resume_equal() {
  resume_halves "$1" "$2" "$3" && files "$1" "$4" model 1e-5 1e-6 && files "$1" "$4" optimizer 1e-5 1e-7
}

# mpi_same N NAME...: where Open MPI is installed, each $tmp/NAME.bin run as N processes (mpirun, reference
# executor) writes checkpoints bit for bit those of its threads run ($tmp/NAME.ckpt) and the same losses as
# $tmp/NAME.out; without mpirun it says so and passes.
mpi_same() {
  local n=$1 name f
  shift
  if ! command -v mpirun >/dev/null; then
    echo "skipped: the MPI backend (mpirun not installed)"
    return 0
  fi
  local mpirun=(timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader
                --mca btl_vader_single_copy_mechanism none)
  for name in "$@"; do
    "${mpirun[@]}" -n "$n" "$DDPRUN" "$tmp/$name.bin" --device ref --checkpoint-dir "$tmp/$name.mpi.ckpt" \
      >"$tmp/$name.mpi.out" 2>&1 || { fail "$name under mpirun -n $n: $(tail -3 "$tmp/$name.mpi.out")"; continue; }
    grep -q "rank 0 of $n processes, MPI" "$tmp/$name.mpi.out" || fail "$name: not run as $n MPI processes"
    for f in model optimizer; do
      cmp -s "$(ckpt_latest "$tmp/$name.mpi.ckpt")/$f.safetensors" "$(ckpt_latest "$tmp/$name.ckpt")/$f.safetensors" ||
        fail "$name: $f.safetensors of the MPI run differs from the threads run"
    done
    diff <(grep '^step' "$tmp/$name.out" | awk '{print $4}') <(grep '^step' "$tmp/$name.mpi.out" | awk '{print $4}') \
      >/dev/null || fail "$name: MPI losses differ from the threads run"
    echo "ok: $name under mpirun -n $n: checkpoints and losses bit for bit the threads run's"
  done
}
