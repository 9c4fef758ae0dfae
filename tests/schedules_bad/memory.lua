-- tests/schedules_bad/memory.lua: more than the 512 MB memory cap.
local big = string.rep("x", 1 << 30)
return schedule {}
