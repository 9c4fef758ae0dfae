-- tests/schedules_bad/xpcall_loop.lua: Lua runs a message handler inside the hook that raised the error,
-- with hooks off, so a handler that loops forever escaped the instruction limit (line 4).
local function spin() while true do end end
xpcall(spin, spin)
