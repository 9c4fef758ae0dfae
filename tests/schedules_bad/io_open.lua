-- tests/schedules_bad/io_open.lua: schedules cannot open files; io is nil in the sandbox.
local f = io.open("/etc/passwd")
return schedule {}
