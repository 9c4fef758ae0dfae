#!/usr/bin/env bash
# tests/e2e/test_scaling.sh: compiling and inspecting grow linearly with the model's depth (issue 11: 1024
# layers took 6.5 s, 2048 28 s, 4096 over 90 s). A narrow transformer (d_model 64, 2 heads, context 16,
# vocab 256) is compiled at 1024 and at 4096 layers on one rank, and at 512 and 2048 layers on 2 ranks,
# once with one all-reduce per unit overlapped with the backward (the sync pass, the verifier's
# cross-stream check) and once with a bucket per unit (the layout's buckets, the optimizer overlapped per
# bucket). Each time the 4x deeper plan must cost less than 5x the CPU time of the shallow one + 1 s, and
# so must `ddpc inspect` of it (linear measures 4.0-4.6x here, sorts and caches included; quadratic is 16x). CPU seconds (user + sys of ddpc), not wall time: a busy machine or a slow
# disk (the plans are fsync'd) does not decide. The times are printed.
. "$(dirname "$0")/lib.sh"
e2e_tmp scaling
cp "$DDP_SOURCE_DIR/schedules/lib/models.lua" "$tmp/" || die "no schedules/lib/models.lua"
deep() { # deep NAME PARALLEL: a schedule of the narrow transformer; --set model.layers chooses the depth
  cat >"$tmp/$1.lua" <<LUA
local models = require "models"
return schedule {
  model = models.tiny({ d_model = 64, d_ff = 128, heads = 2, layers = 4, vocab = 256, context = 16 }),
  data = { global_batch = 4, tokens = "random", seed = 1 }, precision = "fp32",
  optimizer = adamw { lr = 1e-3 }, parallel = $2, steps = 1, seed = 1,
}
LUA
}
deep single "single()"
deep ddp 'ddp { ranks = 2, sync = "individual", overlap = "backward" }'
deep buckets 'ddp { ranks = 2, sync = "bucketed", bucket_mb = 0.01, overlap = "backward", optimizer_overlap = true }'

# measure LIMIT CMD...: runs CMD (stdout to $tmp/out) under a wall-clock limit of LIMIT seconds; $cpu = its
# user + sys CPU seconds. Returns CMD's status (124: over the limit).
measure() {
  local limit=$1 rc t
  shift
  TIMEFORMAT='%3U %3S'
  { time timeout "$limit" "$@" >"$tmp/out" 2>"$tmp/err"; } 2>"$tmp/time"
  rc=$?
  t=$(tail -n 1 "$tmp/time")
  cpu=$(awk -v u="${t% *}" -v s="${t#* }" 'BEGIN { printf "%.3f", u + s }')
  return $rc
}

# scale NAME SMALL LARGE: compiles and inspects NAME at SMALL and LARGE (= 4 x SMALL) layers and compares.
scale() {
  local name=$1 small=$2 large=$3 c_small i_small limit
  measure 600 "$DDPC" "$tmp/$name.lua" -o "$tmp/$name.bin" --set "model.layers=$small" --quiet ||
    { fail "$name, $small layers, does not compile: $(head -c 300 "$tmp/err")"; return; }
  c_small=$cpu
  measure 600 "$DDPC" inspect "$tmp/$name.bin" || { fail "inspect $name, $small layers"; return; }
  i_small=$cpu
  # the deep compile may take 5x + 1 s of CPU; the wall-clock limit is generous beyond that (a busy machine)
  limit=$(awk -v c="$c_small" 'BEGIN { printf "%d", 8 * (5 * c + 1) + 60 }')
  measure "$limit" "$DDPC" "$tmp/$name.lua" -o "$tmp/$name.bin" --set "model.layers=$large" --quiet
  case $? in
    0) ;;
    124) fail "$name, $large layers: still compiling after $limit s ($small layers: $c_small s of CPU)"; return ;;
    *) fail "$name, $large layers, does not compile: $(head -c 300 "$tmp/err")"; return ;;
  esac
  local c_large=$cpu
  measure 600 "$DDPC" inspect "$tmp/$name.bin" || { fail "inspect $name, $large layers"; return; }
  local i_large=$cpu
  grep -Eq "^layers +$large\$" "$tmp/out" || fail "inspect $name: the plan does not have $large layers"
  echo "$name: compile $small layers $c_small s, $large layers $c_large s; inspect $i_small s, $i_large s (CPU)"
  awk -v a="$c_large" -v b="$c_small" 'BEGIN { exit !(a < 5 * b + 1) }' ||
    fail "$name: compiling $large layers took $c_large s of CPU, over 5 x $c_small s + 1 s ($small layers)"
  awk -v a="$i_large" -v b="$i_small" 'BEGIN { exit !(a < 5 * b + 1) }' ||
    fail "$name: inspect of $large layers took $i_large s of CPU, over 5 x $i_small s + 1 s ($small layers)"
  rm -f "$tmp/$name.bin"
}

scale single 1024 4096
scale ddp 512 2048
scale buckets 512 2048
exit $fail
