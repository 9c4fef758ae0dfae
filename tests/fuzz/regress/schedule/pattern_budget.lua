local s = string.rep("a", 100000)
return s:find(string.rep("a*", 30) .. "b")
