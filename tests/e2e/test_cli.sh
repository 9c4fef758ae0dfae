#!/usr/bin/env bash
# tests/e2e/test_cli.sh: the command lines follow the conventions (docs/CLI.md) and refuse what they must
# (issues 11 and 14): getopt_long with --opt=value, -h/--help anywhere for each command (usage on stdout,
# exit 0), --version, exit 2 for a bad command line and 1 for other failures, one line on stderr; an
# output that names an input (or another output) is refused with the input intact; writes to /dev/full
# fail; numbers are range-checked (no wrap, no saturation, no NaN); a FIFO given as schedule, plan, token
# file or checkpoint is refused at once; a token file with an id >= vocab is refused at load, before step
# 1, with the token's offset; `ddpc inspect --json` is one valid JSON document.
. "$(dirname "$0")/lib.sh"
e2e_tmp cli
src="$DDP_SOURCE_DIR/schedules"

# expect NAME CODE PATTERN cmd...: exit status CODE, exactly one line on stderr matching PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3 rc; shift 3
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" != "$code" ]; then fail "$name: exit $rc, expected $code: $(head -2 "$tmp/err")"; return 1; fi
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$lines" != 1 ]; then fail "$name: $lines lines on stderr: $(head -3 "$tmp/err")"; return 1; fi
  if ! grep -qE -- "$pattern" "$tmp/err"; then fail "$name: '$(cat "$tmp/err")' lacks /$pattern/"; return 1; fi
  echo "ok: $name: $(cat "$tmp/err")"
}
# help NAME cmd...: exit 0, usage on stdout, nothing on stderr.
help() {
  local name=$1 rc; shift
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" = 0 ] && grep -q "^usage: " "$tmp/out" && [ ! -s "$tmp/err" ]; then echo "ok: $name prints its usage"
  else fail "$name: exit $rc, stdout '$(head -1 "$tmp/out")', stderr '$(head -1 "$tmp/err")'"; fi
}

cp "$src/toy.lua" "$src/lib/models.lua" "$tmp/"
"$DDPC" "$tmp/toy.lua" -o "$tmp/toy.bin" -q || die "toy.lua does not compile"
cp "$tmp/toy.bin" "$tmp/toy.orig"

# ---- issue 14: conventions ----
help "ddpc --help" "$DDPC" --help
help "ddpc SCHEDULE --help" "$DDPC" "$tmp/toy.lua" -o "$tmp/x.bin" --help
help "ddpc -h last" "$DDPC" "$tmp/toy.lua" -h
help "ddpc inspect PLAN --help" "$DDPC" inspect "$tmp/toy.bin" --help
grep -q "ddpc inspect PLAN" "$tmp/out" || fail "ddpc inspect --help is not inspect's usage"
help "ddprun PLAN --help" "$DDPRUN" "$tmp/toy.bin" --help
help "ddprun PLAN --bogus --help" "$DDPRUN" "$tmp/toy.bin" --bogus --help
[ -e "$tmp/x.bin" ] && fail "--help compiled anyway"
for tool in "$DDPC" "$DDPRUN"; do
  out=$("$tool" --version 2>&1); rc=$?
  if [ $rc = 0 ] && echo "$out" | grep -qE "^ddp(c|run) [0-9]+\.[0-9]+\.[0-9]+ \(plan format [0-9]+, CUDA [0-9]+\.[0-9]+.*NCCL"; then
    echo "ok: $(basename "$tool") --version: $out"
  else fail "$(basename "$tool") --version: exit $rc: $out"; fi
done
"$DDPRUN" --version | grep -qE "NCCL [0-9]+\.[0-9]+\.[0-9]+\)$" || fail "ddprun --version lacks the NCCL version"

# --opt=value and --opt value, options before and after the positional argument
"$DDPC" --output="$tmp/eq.bin" "$tmp/toy.lua" --quiet || fail "ddpc --output=PLAN"
cmp -s "$tmp/eq.bin" "$tmp/toy.bin" || fail "--output= gave another plan"
"$DDPRUN" --device=ref "$tmp/toy.bin" --steps=2 --metrics="$tmp/eq.jsonl" --quiet >/dev/null || fail "ddprun --opt=value"
[ "$(grep -c '"step"' "$tmp/eq.jsonl" 2>/dev/null)" = 2 ] || fail "--steps=2 --metrics=F: $(cat "$tmp/eq.jsonl" 2>&1)"
"$DDPC" inspect --rank=0 "$tmp/toy.bin" >/dev/null || fail "ddpc inspect --rank=0"

# exit statuses: 2 for the command line, 1 for the work
expect unknown_option 2 "^ddprun: unknown option '--bogus' \(see ddprun --help\)$" "$DDPRUN" "$tmp/toy.bin" --bogus
expect unknown_option_ddpc 2 "^ddpc: unknown option '--bogus'" "$DDPC" "$tmp/toy.lua" -o "$tmp/x.bin" --bogus=1
expect missing_value 2 "^ddprun: --steps needs a value$" "$DDPRUN" "$tmp/toy.bin" --steps
expect missing_value_ddpc 2 "^ddpc: -o needs a value$" "$DDPC" "$tmp/toy.lua" -o
expect flag_with_value 2 "^ddprun: --quiet takes no value, got 'yes'$" "$DDPRUN" "$tmp/toy.bin" --quiet=yes
# checkpoint options without a folder, an empty folder name, --bench not first, empty list items
expect save_every_no_dir 2 "^ddprun: --save-every needs --checkpoint-dir DIR$" "$DDPRUN" "$tmp/toy.bin" --save-every 2
expect keep_no_dir 2 "^ddprun: --keep-checkpoints needs --checkpoint-dir DIR$" "$DDPRUN" "$tmp/toy.bin" --keep-checkpoints 3
expect empty_ckpt_dir 2 "^ddprun: --checkpoint-dir: an empty path$" "$DDPRUN" "$tmp/toy.bin" --checkpoint-dir ""
expect bench_not_first 2 "^ddprun: --bench must come first: ddprun --bench allreduce\|interference\|plot \.\.\.$" \
  "$DDPRUN" "$tmp/toy.bin" --bench allreduce
expect sizes_empty_item 2 "^ddprun --bench allreduce: --sizes-mb: an empty item in '1,,2'$" "$DDPRUN" --bench allreduce --device ref --sizes-mb 1,,2
expect sizes_trailing_comma 2 "^ddprun --bench allreduce: --sizes-mb: an empty item in '1,'$" "$DDPRUN" --bench allreduce --device ref --sizes-mb 1,
expect no_plan 2 "^ddprun: no plan given" "$DDPRUN" --device ref
expect two_plans 2 "more than one plan" "$DDPRUN" "$tmp/toy.bin" "$tmp/toy.bin"
expect inspect_no_plan 2 "^ddpc inspect: no plan given" "$DDPC" inspect
expect bad_device 2 "^ddprun: --device: 'tpu' is not one of cuda, ref$" "$DDPRUN" "$tmp/toy.bin" --device tpu
expect missing_plan 1 "none.bin" "$DDPRUN" "$tmp/none.bin" --device ref
expect missing_schedule 1 "none.lua" "$DDPC" "$tmp/none.lua" -o "$tmp/x.bin"
expect inspect_missing 1 "^ddpc inspect: .*none.bin" "$DDPC" inspect "$tmp/none.bin"

# ---- issue 11: numbers are range-checked ----
expect steps_saturate 2 "^ddprun: --steps: '99999999999999999999' is not an integer in 0\.\.1000000000$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --steps 99999999999999999999
expect nproc_wrap 2 "^ddprun: --nproc: '4294967297' is not an integer in 1\.\.4096$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --nproc 4294967297
expect save_every_zero 2 "^ddprun: --save-every: '0'" "$DDPRUN" "$tmp/toy.bin" --save-every 0
expect seed_text 2 "^ddprun: --seed: '12abc'" "$DDPRUN" "$tmp/toy.bin" --seed 12abc
expect seed_plus 2 "^ddprun: --seed: ' 7'" "$DDPRUN" "$tmp/toy.bin" --seed " 7"
expect peak_nan 2 "^ddprun: --peak-tflops: 'nan' is not a number in \(0, 1000000\]$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --peak-tflops nan
expect peak_inf 2 "^ddprun: --peak-tflops: 'inf'" "$DDPRUN" "$tmp/toy.bin" --peak-tflops inf
expect rank_wrap 2 "^ddpc inspect: --rank: '4294967296' is not an integer in 0\.\.2147483646$" \
  "$DDPC" inspect "$tmp/toy.bin" --rank 4294967296
expect rank_range 2 "^ddpc inspect: --rank: 1, but .*toy.bin has 1 ranks" "$DDPC" inspect "$tmp/toy.bin" --rank 1
expect jobs_huge 2 "^ddpc: -j: '99999999999999999999' is not an integer in 1\.\.1024$" \
  "$DDPC" "$tmp/toy.lua" -o "$tmp/x.bin" -j 99999999999999999999
expect time_limit_nan 2 "^ddpc: --time-limit: 'nan'" "$DDPC" "$tmp/toy.lua" -o "$tmp/x.bin" --time-limit nan
[ -e "$tmp/x.bin" ] && fail "a refused command line wrote $tmp/x.bin"

# ---- issue 11: outputs never replace inputs ----
cp "$tmp/toy.lua" "$tmp/keep.lua"
expect plan_over_schedule 2 "^ddpc: -o: .*toy.lua is the same file as the schedule; refused$" \
  "$DDPC" "$tmp/toy.lua" -o "$tmp/toy.lua"
cmp -s "$tmp/toy.lua" "$tmp/keep.lua" || fail "ddpc -o SCHEDULE changed the schedule"
expect plan_no_folder 2 "^ddpc: -o .*no_such_folder/p.bin: its folder .*no_such_folder does not exist$" \
  "$DDPC" "$tmp/toy.lua" -o "$tmp/no_such_folder/p.bin"
ln -sf toy.lua "$tmp/link.lua"
expect plan_over_schedule_link 2 "same file as the schedule" "$DDPC" "$tmp/toy.lua" -o "$tmp/link.lua"
cmp -s "$tmp/toy.lua" "$tmp/keep.lua" || fail "ddpc -o LINK-TO-SCHEDULE changed the schedule"
cp "$tmp/models.lua" "$tmp/models.keep"
expect plan_over_module 2 "^ddpc: -o: .*models.lua is a Lua file \(a schedule, or a module one requires\); refused$" \
  "$DDPC" "$tmp/toy.lua" -o "$tmp/models.lua"
cmp -s "$tmp/models.lua" "$tmp/models.keep" || fail "ddpc -o MODULE changed the module"
expect metrics_over_plan 2 "^ddprun: --metrics: .*toy.bin is the same file as the plan; refused$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --metrics "$tmp/toy.bin"
cmp -s "$tmp/toy.bin" "$tmp/toy.orig" || fail "--metrics PLAN changed the plan"
expect trace_over_plan 2 "^ddprun: --trace: .*toy.bin is the same file as the plan" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --trace "$tmp/toy.bin"
cmp -s "$tmp/toy.bin" "$tmp/toy.orig" || fail "--trace PLAN changed the plan"
expect metrics_is_trace 2 "^ddprun: --metrics: .*m.json is the same file as the --trace; refused$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --metrics "$tmp/m.json" --trace "$tmp/m.json"
[ -e "$tmp/m.json" ] && fail "metrics == trace wrote $tmp/m.json"
mkdir -p "$tmp/ck"
expect metrics_in_checkpoint 2 "^ddprun: --metrics .*ck/model.safetensors lies in --checkpoint-dir .*ck, whose checkpoints ddprun writes, replaces and removes: write it elsewhere$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --metrics "$tmp/ck/model.safetensors"
# anything in the folder or below it, through .. or a link: a checkpoint being resumed must not be overwritten
"$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --quiet || fail "toy run with checkpoints"
ln -sfn "$tmp/ck" "$tmp/ck_link"
ck_files=$(cd "$tmp/ck" && find . -type f -exec md5sum {} + | sort)
expect trace_in_step 2 "^ddprun: --trace .*model.safetensors lies in --checkpoint-dir .*ck, whose checkpoints" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --resume --trace "$tmp/ck_link/step-000005/model.safetensors"
expect metrics_in_step 2 "^ddprun: --metrics .*optimizer.safetensors lies in --checkpoint-dir .*ck, whose checkpoints" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --resume --metrics "$tmp/ck/step-000005/../step-000005/optimizer.safetensors"
ln -sfn "$tmp/ck/step-000005/model.safetensors" "$tmp/mlink.jsonl" # a link to a checkpoint's file, not its folder
expect metrics_link_to_step 2 "^ddprun: --metrics .*mlink.jsonl lies in --checkpoint-dir .*ck, whose checkpoints" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --resume --metrics "$tmp/mlink.jsonl"
[ "$(cd "$tmp/ck" && find . -type f -exec md5sum {} + | sort)" = "$ck_files" ] || fail "a refused run changed the checkpoint"
# a run that does not resume refuses a folder holding checkpoints (its own would mix with them, and a later
# --resume would pick the old run's newest)
expect fresh_over_old 2 "^ddprun: --checkpoint-dir .*ck already holds checkpoints \(the newest step-000005\): add --resume to continue from them, or give a new folder$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ck" --steps 2
[ "$(cd "$tmp/ck" && find . -type f -exec md5sum {} + | sort)" = "$ck_files" ] || fail "the refused fresh run changed the checkpoint"

# an output whose folder is missing is refused before step 1 (a trace is written after the last step: it
# failed after the whole run, before the final checkpoint)
expect trace_no_folder 2 "^ddprun: --trace .*no_such_folder/t.json: its folder .*no_such_folder does not exist$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --trace "$tmp/no_such_folder/t.json" --checkpoint-dir "$tmp/ck_trace"
[ -e "$tmp/ck_trace" ] && fail "trace_no_folder: the run started (it made $tmp/ck_trace)"
expect metrics_no_folder 2 "^ddprun: --metrics .*no_such_folder/m.jsonl: its folder .*no_such_folder does not exist$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --metrics "$tmp/no_such_folder/m.jsonl"
# a malformed DDP_* value is one line naming it, also where this run's path does not read it (the reference
# executor and a CUDA or NCCL knob)
expect env_nccl_timeout 2 "^ddprun: DDP_NCCL_TIMEOUT_S='abc' must be a number of seconds above 0" \
  env DDP_NCCL_TIMEOUT_S=abc "$DDPRUN" "$tmp/toy.bin" --device ref --steps 1
expect env_cuda_graph 2 "^ddprun: DDP_CUDA_GRAPH='3' must be 0 or 1$" \
  env DDP_CUDA_GRAPH=3 "$DDPRUN" "$tmp/toy.bin" --device ref --steps 1
# --nproc inside a launch of several tasks would run the job once per task: refused; an sbatch script's own
# SLURM_NTASKS (its batch step) is not a launch of tasks
expect nproc_under_mpirun 2 "^ddprun: --nproc 2 inside a launch of 2 tasks \(OMPI_COMM_WORLD_SIZE=2\): each task would run the whole job" \
  env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$DDPRUN" "$tmp/toy.bin" --device ref --nproc 2
expect nproc_under_srun 2 "^ddprun: --nproc 2 inside a launch of 2 tasks \(SLURM_NTASKS=2\)" \
  env SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_STEP_ID=0 "$DDPRUN" "$tmp/toy.bin" --device ref --nproc 2
env SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_STEP_ID=4294967294 "$DDPRUN" "$tmp/toy.bin" --device ref --nproc 1 --steps 1 -q \
  >/dev/null 2>"$tmp/err" || fail "--nproc in an sbatch script (its batch step): $(cat "$tmp/err")"
# a run whose stdout cannot be written (a full disk) fails, naming it, as --help does
if [ -w /dev/full ]; then
  expect stdout_full 1 "^ddprun: cannot write to stdout: No space left on device$" \
    sh -c '"$1" "$2" --device ref --steps 2 >/dev/full' sh "$DDPRUN" "$tmp/toy.bin"
  expect help_stdout_full 1 "^ddprun: cannot write to stdout" sh -c '"$1" --help >/dev/full' sh "$DDPRUN"
fi
# --metrics on a FIFO no reader opens: a stop signal still ends the run (open() had waited through it)
mkfifo "$tmp/nobody_reads"
"$DDPRUN" "$tmp/toy.bin" --device ref --steps 2 --quiet --metrics "$tmp/nobody_reads" 2>"$tmp/fifo.err" &
pid=$!
sleep 1
kill -TERM "$pid"
for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fail "a FIFO without a reader: SIGTERM did not end the run in 5 s"
else
  wait "$pid"; st=$?
  [ "$st" != 0 ] && grep -q "nobody_reads: a FIFO no reader opened before the stop signal$" "$tmp/fifo.err" ||
    fail "a FIFO without a reader: status $st: $(cat "$tmp/fifo.err")"
fi
# srun --mpi=none (a job step of 2 tasks without MPI wiring) is one line before MPI starts
"$DDPC" "$DDP_SOURCE_DIR/schedules/toy_ddp.lua" -o "$tmp/toy_ddp.bin" -q || fail "toy_ddp does not compile"
expect srun_mpi_none 1 "^ddprun: rank 1: SLURM_NTASKS=2 \(from slurm\) but no MPI wiring \(no PMIX_RANK, PMI_RANK, PMI_FD\): start ddprun with srun --mpi=pmix -n 2, or mpirun -n 2$" \
  env SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_JOB_ID=5 SLURM_JOB_NODELIST=localhost SLURM_STEP_ID=0 \
  "$DDPRUN" "$tmp/toy_ddp.bin" --device ref
# a checkpoint folder that cannot be made is refused before step 1 (it failed at the first checkpoint)
touch "$tmp/a_file"
expect ckpt_under_file 2 "^ddprun: --checkpoint-dir .*a_file/ck: .*a_file is not a folder$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/a_file/ck"
expect ckpt_is_file 2 "^ddprun: --checkpoint-dir .*a_file: .*a_file is not a folder$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/a_file"
"$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/new1/new2" -q --steps 1 >/dev/null 2>&1 &&
  [ -f "$tmp/new1/new2/latest" ] || fail "a missing checkpoint folder two levels deep is not made"

# a damaged kernel-cache entry (truncated, garbage, an older entry without the trailer) is compiled again,
# never embedded in a plan: the plan equals the one compiled with a clean cache, and the entry is mended
kc="$tmp/kcache"
rm -rf "$kc"
DDPC_CACHE_DIR="$kc" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/kc1.bin" -q || fail "toy with a fresh cache"
entries=("$kc"/*.cubin)
if [ "${#entries[@]}" -ge 2 ] && [ -f "${entries[0]}" ]; then
  head -c 1000 "${entries[0]}" >"$tmp/cut" && mv "$tmp/cut" "${entries[0]}"
  printf 'garbage' >"${entries[1]}"
  DDPC_CACHE_DIR="$kc" "$DDPC" "$DDP_SOURCE_DIR/schedules/toy.lua" -o "$tmp/kc2.bin" -q || fail "toy with a damaged cache"
  cmp -s "$tmp/kc1.bin" "$tmp/kc2.bin" && echo "ok: a damaged kernel cache is compiled again" ||
    fail "a damaged kernel-cache entry reached the plan"
  [ "$(tail -c 24 "${entries[1]}" | head -c 8)" = ddpcubin ] || fail "the damaged entry was not replaced"
else
  fail "toy.lua left fewer than two kernel-cache entries in $kc"
fi

# ---- issue 11: writes are checked up to fclose ----
# a write that fails midway (here the file-size limit, SIGXFSZ ignored: EFBIG, as a full disk gives ENOSPC)
# names the failed write's own error, and the file is cut back to its last complete line
rm -f "$tmp/fsize.jsonl"
expect metrics_fsize 1 "^ddprun: rank 0: .*fsize.jsonl: cannot write: File too large$" \
  bash -c 'trap "" XFSZ; ulimit -f 16; exec "$@"' - "$DDPRUN" "$tmp/toy.bin" --device ref --steps 200 \
  --metrics "$tmp/fsize.jsonl"
python3 - "$tmp/fsize.jsonl" <<'PY' && echo "ok: metrics cut back to whole lines" || fail "metrics_fsize: a partial line remains"
import json, sys
text = open(sys.argv[1]).read()
assert text.endswith("\n") and len(text.splitlines()) >= 2, len(text)
for line in text.splitlines():
    json.loads(line)
PY
expect metrics_dev_full 1 "^ddprun: rank 0: /dev/full: cannot write: No space left on device$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --metrics /dev/full --quiet
# A trace (written by rename) must never replace a device: as root the old code renamed its temporary file
# over /dev/full, so the test uses a device node of its own when it may make one.
full=/dev/full
if [ "$(id -u)" = 0 ] && mknod "$tmp/full" c 1 7 2>/dev/null; then full="$tmp/full"; fi
expect trace_dev_full 2 "^ddprun: --trace: $full exists and is not a regular file$" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --trace "$full" --quiet
[ -c "$full" ] || fail "--trace replaced the device $full"
expect plan_dev_full 2 "^ddpc: -o: $full exists and is not a regular file$" "$DDPC" "$tmp/toy.lua" -o "$full"
[ -c "$full" ] || fail "ddpc -o replaced the device $full"
if "$DDPC" inspect "$tmp/toy.bin" >/dev/full 2>"$tmp/err"; then fail "inspect >/dev/full succeeded"
else echo "ok: inspect >/dev/full fails: $(cat "$tmp/err")"; fi
if "$DDPC" inspect --json "$tmp/toy.bin" >/dev/full 2>"$tmp/err"; then fail "inspect --json >/dev/full succeeded"
else echo "ok: inspect --json >/dev/full fails: $(cat "$tmp/err")"; fi

# ---- issue 11: inputs that are not regular files are refused at once ----
mkfifo "$tmp/fifo.bin" "$tmp/fifo.lua"
# within 2 s: `timeout 2` ends a blocked open with status 124
fifo() {
  local name=$1 pattern=$2 rc; shift 2
  timeout 2 "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc = 124 ]; then fail "$name: blocked on the FIFO"; return; fi
  if [ $rc = 0 ] || ! grep -qE -- "$pattern" "$tmp/err"; then fail "$name: exit $rc: $(cat "$tmp/err")"; return; fi
  echo "ok: $name: $(cat "$tmp/err")"
}
fifo fifo_plan "fifo.bin.*not a regular file" "$DDPRUN" "$tmp/fifo.bin" --device ref
fifo fifo_inspect "fifo.bin.*not a regular file" "$DDPC" inspect "$tmp/fifo.bin"
fifo fifo_schedule "fifo.lua.*not a regular file" "$DDPC" "$tmp/fifo.lua" -o "$tmp/x.bin"
printf 'local m = require "fifo"\nreturn m\n' >"$tmp/req.lua"
fifo fifo_module "require \"fifo\": .*fifo.lua is not a regular file" "$DDPC" "$tmp/req.lua" -o "$tmp/x.bin"
"$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ckf" --quiet >/dev/null || fail "checkpoint run"
rm -f "$tmp/ckf/model.safetensors" && mkfifo "$tmp/ckf/model.safetensors"
fifo fifo_checkpoint "model.safetensors.*not a regular file" \
  "$DDPRUN" "$tmp/toy.bin" --device ref --checkpoint-dir "$tmp/ckf" --resume --quiet

# ---- token files: validated against the vocabulary at load, before step 1 ----
cat >"$tmp/tokens.lua" <<LUA
local models = require "models"
return schedule { model = models.tiny(), data = { global_batch = 2, tokens = "tokens.bin" },
                  optimizer = adamw { lr = 1e-3 }, steps = 1 }
LUA
python3 - "$tmp/tokens.bin" <<'PY'
import struct, sys
toks = [i % 200 for i in range(4000)]
toks[3999] = 300   # vocab of models.tiny() is 256; one step reads only the first few windows
open(sys.argv[1], "wb").write(struct.pack("<%dH" % len(toks), *toks))
PY
"$DDPC" "$tmp/tokens.lua" -o "$tmp/tok.bin" -q || fail "token schedule does not compile"
expect token_at_load 1 "^ddprun: .*tokens.bin: token 300 at offset 3999 is >= vocab 256$" \
  "$DDPRUN" "$tmp/tok.bin" --device ref
grep -q "^step" "$tmp/out" && fail "a step ran before the token file was refused"
expect plan_over_tokens 2 "^ddpc: -o: .*tokens.bin is the same file as the token file; refused$" \
  "$DDPC" "$tmp/tokens.lua" -o "$tmp/tokens.bin" -q
expect metrics_over_tokens 2 "^ddprun: --metrics: .*tokens.bin is the same file as the plan's token file" \
  "$DDPRUN" "$tmp/tok.bin" --device ref --metrics "$tmp/tokens.bin"
python3 -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(len(d) != 8000)" "$tmp/tokens.bin" ||
  fail "the token file was changed"
mv "$tmp/tokens.bin" "$tmp/tokens.keep" && mkfifo "$tmp/tokens.bin"
fifo fifo_tokens "tokens.bin.*not a regular file" "$DDPRUN" "$tmp/tok.bin" --device ref

# ---- ddprun --bench: the same conventions (plot needs no GPU) ----
help "ddprun --bench allreduce --help" "$DDPRUN" --bench allreduce --iters 3 --help
help "ddprun --bench plot FILE --help" "$DDPRUN" --bench plot "$tmp/ar.jsonl" --help
printf '%s\n' '{"kind": "allreduce", "impl": "ddpc", "world": 2, "mb": 1, "ms": 0.1, "algbw_GBs": 10, "busbw_GBs": 10}' \
  '{"kind": "allreduce", "impl": "ddpc", "world": 2, "mb": 10, "ms": 0.2, "algbw_GBs": 50, "busbw_GBs": 50}' >"$tmp/ar.jsonl"
cp "$tmp/ar.jsonl" "$tmp/ar.keep"
"$DDPRUN" --bench plot --out="$tmp/ar.svg" "$tmp/ar.jsonl" --link-GBs=100 >/dev/null && grep -q "<svg" "$tmp/ar.svg" ||
  fail "--bench plot --out=F.svg"
expect bench_plot_no_folder 2 "^ddprun --bench plot: -o .*no_such_folder/ar.svg: its folder .*no_such_folder does not exist$" \
  "$DDPRUN" --bench plot -o "$tmp/no_such_folder/ar.svg" "$tmp/ar.jsonl"
expect plot_over_input 2 "^ddprun --bench plot: -o: .*ar.jsonl is the same file as the results file; refused$" \
  "$DDPRUN" --bench plot -o "$tmp/ar.jsonl" "$tmp/ar.jsonl"
cmp -s "$tmp/ar.jsonl" "$tmp/ar.keep" || fail "--bench plot -o INPUT changed the input"
expect plot_dev_full 1 "^ddprun --bench plot: /dev/full: cannot write: No space left on device$" \
  "$DDPRUN" --bench plot -o /dev/full "$tmp/ar.jsonl"
expect plot_link_nan 2 "^ddprun --bench plot: --link-GBs: 'nan' is not a number" \
  "$DDPRUN" --bench plot -o "$tmp/x.svg" --link-GBs nan "$tmp/ar.jsonl"
expect bench_nproc_wrap 2 "^ddprun --bench allreduce: --nproc: '4294967297' is not an integer in 1\.\.4096$" \
  "$DDPRUN" --bench allreduce --nproc 4294967297
expect bench_sizes_nan 2 "^ddprun --bench allreduce: --sizes-mb: 'nan'" "$DDPRUN" --bench allreduce --sizes-mb 1,nan
# the GPU benchmarks without a usable GPU: one line before any rank starts (it was one per rank, after the
# rendezvous); where a GPU is present the benchmark would run, so this case is for GPU-less machines (CI)
if nvidia-smi -L >/dev/null 2>&1; then
  echo "not checked on this machine (a GPU is present): the benchmarks' one line without a GPU"
else
  expect bench_no_gpu 1 "^ddprun --bench allreduce: no (GPU|CUDA driver).*\(--device ref runs the reference executor's collectives on CPU ranks\)$" \
    "$DDPRUN" --bench allreduce --nproc 2 --sizes-mb 1
  expect interference_no_gpu 1 "^ddprun --bench interference: no (GPU|CUDA driver)" "$DDPRUN" --bench interference --nproc 2
fi
expect bench_unknown 2 "^ddprun --bench: unknown benchmark 'sort'" "$DDPRUN" --bench sort
help "ddprun --bench interference --help" "$DDPRUN" --bench interference --mb 5 --help
expect interference_path 2 "^ddprun --bench interference: --paths: 'nvls' is not one of default, maxctas8, efficiency, zero, copy, window, window_zero$" \
  "$DDPRUN" --bench interference --paths default,nvls
expect interference_mb 2 "^ddprun --bench interference: --mb: 'nan' is not a number in \(0, 16384\]$" \
  "$DDPRUN" --bench interference --mb nan
expect interference_tokens 2 "^ddprun --bench interference: --tokens: '0' is not an integer in 1\.\.65536$" \
  "$DDPRUN" --bench interference --tokens 0
expect interference_coll 2 "^ddprun --bench interference: --coll: 'gather' is not one of allreduce, reducescatter, allgather, alltoall$" \
  "$DDPRUN" --bench interference --coll gather
expect interference_side 2 "^ddprun --bench interference: --side-sms: '-8' is not an integer in 0\.\.1024$" \
  "$DDPRUN" --bench interference --side-sms -8
expect interference_extra 2 "^ddprun --bench interference: unexpected argument 'x'$" "$DDPRUN" --bench interference x

# ---- ddpc inspect --json: one JSON document for tools ----
"$DDPC" "$src/toy_ddp.lua" -o "$tmp/ddp.bin" -q || fail "toy_ddp.lua does not compile"
"$DDPC" inspect --json "$tmp/ddp.bin" >"$tmp/ddp.json" || fail "inspect --json"
python3 -m json.tool "$tmp/ddp.json" >/dev/null || fail "inspect --json is not JSON"
"$DDPC" inspect "$tmp/ddp.bin" --json --rank 1 >"$tmp/ddp1.json" || fail "inspect --json --rank 1"
python3 - "$tmp/ddp.json" "$tmp/ddp1.json" <<'PY' || fail "inspect --json content"
import json, sys
d, d1 = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["format"] == "ddpc-inspect" and d["plan_format"] >= 1, d["format"]
m = d["meta"]
assert m["world"] == 2 and m["mode_name"] == "train" and m["optimizer_name"], m
assert len(d["ranks"]) == 2 and all("programs" in r for r in d["ranks"])
assert "programs" in d1["ranks"][1] and "programs" not in d1["ranks"][0]
step = d["ranks"][0]["programs"]["step"]
ops = {i["opcode"] for i in step}
assert any("all_reduce" in o.lower() for o in ops), ops
assert len(d["tensors"]) == d["counts"]["tensors"] and d["buckets"] and d["tensors"][0]["name"]
assert any(t["name"] == "fc1.weight" or "fc1" in t["name"] for t in d["tensors"])
print("ok: inspect --json: %d tensors, %d buckets, %d step instructions on rank 0" %
      (len(d["tensors"]), len(d["buckets"]), len(step)))
PY
exit $fail
