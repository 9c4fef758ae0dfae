-- tests/schedules_bad/gc_loop.lua: a __gc finalizer runs with Lua's hooks off, so one that loops forever
-- escaped the instruction limit; setmetatable refuses a metatable with __gc (line 4).
local mt = {__gc = function() while true do end end}
setmetatable({}, mt)
collectgarbage()
