-- tests/schedules_bad/slow_concat.lua: few instructions, each copying 64 MB: under the instruction limit
-- for hours, so only the time limit stops it (line 5).
local s = string.rep("x", 64 << 20)
local n = 0
for i = 1, 1e7 do n = n + #(s .. i) end
