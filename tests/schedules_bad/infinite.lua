-- tests/schedules_bad/infinite.lua: a runaway loop stops at the instruction limit (line 3).
local n = 0
while true do n = n + 1 end
