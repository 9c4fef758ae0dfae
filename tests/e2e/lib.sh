# tests/e2e/lib.sh (sourced by every tests/e2e/*.sh): what the end-to-end tests share. `e2e_tmp NAME`
# makes the scratch folder $tmp; `fail MSG` prints "FAIL: MSG" and marks the test failed (a test ends with
# `exit $fail`), `die MSG` does so and exits at once; `write` and `same` build, run and compare the
# generated DDP schedules of test_ddp_equivalence.sh (reference executor) and gpu_ddp.sh (GPUs).
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
