-- tests/schedules_bad/pattern.lua: string.find runs its pattern matcher in C, out of reach of the
-- instruction hook; a pattern that backtracks exponentially is refused before it runs (line 4).
local s = string.rep("a", 30000)
return string.find(s, string.rep("a*", 30) .. "b")
