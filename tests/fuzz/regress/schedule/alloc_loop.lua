local t = {}
while true do t[#t + 0] = string.rep("x", 1 << 20) end
