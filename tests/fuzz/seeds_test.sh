#!/usr/bin/env bash
# tests/fuzz/seeds_test.sh CORPUS REPLAY...: ctest fuzz_seeds. Builds the seed corpus (make_corpus.sh) and
# replays it through every fuzz target's replay executable (fuzz_replay_<target>, in the normal or asan
# build): valid plans read, inspect, round-trip and run a step on the reference executor; every shipped
# schedule loads and compiles; the checkpoint round-trips; the token files fill batches. Fails when a
# target aborts (a broken invariant) or a corpus folder is empty.
set -euo pipefail
corpus=$1
shift
bash "$(dirname "$0")/make_corpus.sh" "$corpus"
for exe in "$@"; do
  t=${exe##*fuzz_replay_}
  n=$(ls "$corpus/$t" | wc -l)
  [ "$n" -gt 0 ] || { echo "fuzz_seeds: no seeds for $t" >&2; exit 1; }
  "$exe" "$corpus/$t" 2>"$corpus/$t.log" || { tail -20 "$corpus/$t.log" >&2; echo "fuzz_seeds: $t failed" >&2; exit 1; }
  echo "fuzz_seeds: $t: $n seeds replayed"
done
