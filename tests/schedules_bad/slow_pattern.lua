-- tests/schedules_bad/slow_pattern.lua: one pattern match under the pattern budget that still takes
-- seconds in C: the watchdog ends ddpc with one line, as the hook cannot run inside string.find.
local s = string.rep("a", 30000)
return string.find(s, "a*b")
