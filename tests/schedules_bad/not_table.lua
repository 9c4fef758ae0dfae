-- tests/schedules_bad/not_table.lua: a schedule must return schedule{...}.
return 42
