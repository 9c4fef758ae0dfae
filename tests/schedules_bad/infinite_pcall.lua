-- tests/schedules_bad/infinite_pcall.lua: pcall cannot swallow the instruction limit.
while true do
  pcall(function() while true do end end)
end
