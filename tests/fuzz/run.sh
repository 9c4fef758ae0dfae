#!/usr/bin/env bash
# tests/fuzz/run.sh: runs the libFuzzer targets of build-fuzz/ (preset "fuzz") one after another, each
# bounded in time (-max_total_time), per input (-timeout) and memory (-rss_limit_mb), on one core at nice
# 10, seeded from make_corpus.sh (the shipped schedules through the normal build's ddpc). Prints, per
# target, executions, executions/s, coverage and what went wrong, then a total; exits non-zero on any
# crash, leak, out-of-memory, timeout (hang) or watchdog exit. Artifacts (the inputs that failed) land in
# WORK/artifacts/<target>/; replay one with build/tests/fuzz_replay_<target> FILE, or commit it under
# tests/fuzz/regress/<target>/ so ctest keeps replaying it.
#
#   tests/fuzz/run.sh [--time S] [--runs N] [--timeout S] [--rss MB] [--work DIR] [--build DIR] [--keep-going]
#                     [TARGET...]
#
# Defaults: 60 s per target, every target (plan schedule safetensors tokens profile), -timeout 10, 2048 MB,
# WORK build-fuzz/fuzz-work (its corpus grows from run to run), --build build-fuzz. --runs stops a target
# after N executions (or at --time, whichever comes first). --keep-going runs libFuzzer's fork mode
# (-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1): a crash is saved and counted, and fuzzing
# goes on, so one known bug does not end a long run (the exit status still says it failed). The long run
# of docs/FUZZING.md:
#   tests/fuzz/run.sh --runs 10000000 --time 86400 --keep-going
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
time_s=60 runs=-1 timeout_s=10 rss=2048 build=$src/build-fuzz work= targets=() fork=()
while [ $# -gt 0 ]; do
  case $1 in
    --time) time_s=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --rss) rss=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --keep-going) fork=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1); shift ;;
    plan|schedule|safetensors|tokens|profile) targets+=("$1"); shift ;;
    *) echo "usage: tests/fuzz/run.sh [--time S] [--runs N] [--timeout S] [--rss MB] [--work DIR] [--build DIR] [plan|schedule|safetensors|tokens|profile ...]" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(plan schedule safetensors tokens profile)
work=${work:-$build/fuzz-work}
mkdir -p "$work"
work=$(cd "$work" && pwd)

for t in "${targets[@]}"; do
  [ -x "$build/tests/fuzz_$t" ] || { echo "run.sh: $build/tests/fuzz_$t is not built (cmake --preset fuzz && cmake --build --preset fuzz)" >&2; exit 2; }
done
DDP_SOURCE_DIR=$src bash "$src/tests/fuzz/make_corpus.sh" "$work/seeds" || exit 2

failed=0 total_execs=0 total_s=0
printf '%-12s %12s %10s %8s %7s %8s %7s  %s\n' target executions exec/s cov crashes timeouts seconds status
for t in "${targets[@]}"; do
  corpus=$work/corpus/$t art=$work/artifacts/$t log=$work/$t.log
  # Targets write their input (and round-trip plans) to files: in memory where there is /dev/shm.
  tmp=$work/tmp/$t
  [ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm/ddp-fuzz-$t-$$
  mkdir -p "$corpus" "$art" "$tmp"
  rm -rf "${tmp:?}"/*
  extra=()
  case $t in
    schedule) extra=(-dict="$src/tests/fuzz/schedule.dict" -close_fd_mask=2) ;; # print() goes to stderr
    plan) extra=(-max_len=1048576) ;; # the pipeline and tensor seeds are 0.3-0.5 MB: 256 KB cut them short
  esac
  t0=$(date +%s)
  # A sanitizer report ends the run (UBSan halts: -fno-sanitize-recover); leaks are checked (detect_leaks).
  TMPDIR=$tmp ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    nice -n 10 "$build/tests/fuzz_$t" -max_total_time="$time_s" -runs="$runs" -timeout="$timeout_s" \
    -rss_limit_mb="$rss" -print_final_stats=1 -artifact_prefix="$art/" "${extra[@]}" "${fork[@]}" "$corpus" "$work/seeds/$t" \
    >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  # The schedule watchdog ends the process with status 1 and no artifact: keep the input it was running.
  # (A process that ended normally removed its folder; one that crashed left its input too, but libFuzzer
  # saved that one: so only when no artifact explains the exit.)
  if [ -z "$(find "$art" -maxdepth 1 -type f -newermt "@$t0")" ]; then
    for f in "$tmp"/ddp-fuzz.*/schedule.lua; do
      [ -f "$f" ] && cp "$f" "$art/watchdog-$(sha1sum "$f" | cut -c1-12).lua"
    done
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' | tail -n1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{print $2}' | tail -n1)
  if [ ${#fork[@]} -gt 0 ]; then # fork mode: the parent's last "#N: cov: C ft: F corp: K exec/s R ..." line
    last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -n1)
    execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    rate=$(sed -nE 's/.*exec\/s:? ([0-9]+).*/\1/p' <<<"$last")
  fi
  cov=$(grep -o ' cov: [0-9]*' "$log" | awk '{print $2}' | tail -n1)
  crashes=$(find "$art" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \) -newermt "@$t0" | wc -l)
  hangs=$(find "$art" -maxdepth 1 \( -name 'timeout-*' -o -name 'slow-unit-*' -o -name 'watchdog-*' \) -newermt "@$t0" | wc -l)
  status=ok
  if [ $rc -ne 0 ] || [ "$crashes" -gt 0 ] || [ "$hangs" -gt 0 ]; then
    status="FAILED (exit $rc; log $log; artifacts $art)"
    failed=1
  fi
  printf '%-12s %12s %10s %8s %7s %8s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$crashes" "$hangs" "$secs" "$status"
  [ "$status" = ok ] || grep -E 'ERROR|SUMMARY|fuzz invariant|Test unit written|ran longer' "$log" | head -n 8 | sed 's/^/    /'
  [ "$tmp" = "$work/tmp/$t" ] || rm -rf "$tmp"
  total_execs=$((total_execs + ${execs:-0}))
  total_s=$((total_s + secs))
done
printf '%-12s %12s %10s %8s %7s %8s %7s  %s\n' total "$total_execs" "$((total_execs / (total_s > 0 ? total_s : 1)))" - - - "$total_s" \
  "$([ $failed = 0 ] && echo ok || echo FAILED)"
exit $failed
