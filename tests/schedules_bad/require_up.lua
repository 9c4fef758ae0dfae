-- tests/schedules_bad/require_up.lua: require only takes module names from the schedule's folder.
local x = require "../x"
return schedule {}
