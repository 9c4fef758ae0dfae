#!/usr/bin/env bash
# tests/e2e/test_train_pattern.sh: end-to-end training on the reference executor: the tiny transformer on the
# repeating token pattern for 50 steps; the loss must fall clearly (final < 40% of the first) and every
# step must report finite metrics.
. "$(dirname "$0")/lib.sh"
e2e_tmp pattern
"$DDPC" "$DDP_SOURCE_DIR/schedules/tiny_pattern.lua" -o "$tmp/plan.bin" || exit 1
"$DDPRUN" "$tmp/plan.bin" --device ref --metrics "$tmp/m.jsonl" --quiet || exit 1
steps=$(grep -c '"step"' "$tmp/m.jsonl")
[ "$steps" = 50 ] || die "$steps metric lines, expected 50"
first=$(grep '"step": 1,' "$tmp/m.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(grep '"step": 50,' "$tmp/m.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
echo "loss: step 1 $first, step 50 $last"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < 0.4 * f && f > 3) }' || die "the loss did not fall clearly"
