#!/usr/bin/env bash
# tests/e2e/test_schedule_lib.sh: helper modules live in schedules/lib/. `require "name"` reads
# <schedule folder>/name.lua, then <schedule folder>/lib/name.lua, then the schedule library's lib/; a
# missing module names the three places; a helper module compiled as a schedule is refused with one line
# saying so (and leaves no plan); no helper module is left among the schedules.
. "$(dirname "$0")/lib.sh"
e2e_tmp schedule_lib
lib=$DDP_SOURCE_DIR/schedules/lib
[ -f "$lib/models.lua" ] && [ -f "$lib/xl_ddp.lua" ] || fail "schedules/lib/ lacks models.lua or xl_ddp.lua"

for m in "$lib"/*.lua; do
  name=$(basename "$m" .lua)
  [ ! -e "$DDP_SOURCE_DIR/schedules/$name.lua" ] || fail "helper module $name.lua is also among the schedules"
  if "$DDPC" "$m" -o "$tmp/$name.bin" 2>"$tmp/$name.err"; then
    fail "the helper module lib/$name.lua compiled as a schedule"
  else
    want="$m: a helper module (lib/ holds what schedules load with require \"$name\"), not a schedule: compile a schedule that requires it"
    [ "$(cat "$tmp/$name.err")" = "$want" ] || fail "lib/$name.lua: got '$(cat "$tmp/$name.err")', want '$want'"
    [ ! -e "$tmp/$name.bin" ] || fail "refusing lib/$name.lua left a plan"
  fi
done

# A schedule in a folder of its own: models from the library, a module of its own from its lib/.
mkdir -p "$tmp/proj/lib"
cat >"$tmp/proj/lib/mine.lua" <<'LUA'
return { steps = 2 }
LUA
cat >"$tmp/proj/run.lua" <<'LUA'
local models, mine = require "models", require "mine"
return schedule { model = models.toy(), data = { global_batch = 4, rows = 4, seed = 0 }, precision = "fp32",
                  optimizer = sgd { lr = 0.1 }, steps = mine.steps, seed = 1 }
LUA
"$DDPC" "$tmp/proj/run.lua" -o "$tmp/proj.bin" -q 2>"$tmp/proj.err" ||
  fail "a schedule outside schedules/ cannot require models and its own lib/ module: $(cat "$tmp/proj.err")"

# A module beside the schedule wins over the library's.
cat >"$tmp/proj/models.lua" <<'LUA'
return { toy = function() error("the local models.lua was loaded", 2) end }
LUA
if "$DDPC" "$tmp/proj/run.lua" -o "$tmp/proj2.bin" -q 2>"$tmp/proj2.err"; then
  fail "the schedule's own models.lua was not preferred to the library's"
else
  grep -q "the local models.lua was loaded" "$tmp/proj2.err" || fail "unexpected: $(cat "$tmp/proj2.err")"
fi

# A missing module names every place looked in.
echo 'local x = require "nothere"' >"$tmp/proj/missing.lua"
"$DDPC" "$tmp/proj/missing.lua" -o "$tmp/missing.bin" 2>"$tmp/missing.err" && fail "a missing module compiled"
want="$tmp/proj/missing.lua:1: require \"nothere\": module not found: $tmp/proj/nothere.lua, $tmp/proj/lib/nothere.lua or $DDP_SOURCE_DIR/schedules/lib/nothere.lua"
[ "$(cat "$tmp/missing.err")" = "$want" ] || fail "missing module: got '$(cat "$tmp/missing.err")', want '$want'"
exit $fail
