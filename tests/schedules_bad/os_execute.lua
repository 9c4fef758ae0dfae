-- tests/schedules_bad/os_execute.lua: schedules cannot run programs; os is nil in the sandbox.
os.execute("touch /tmp/ddpc_sandbox_escaped")
return schedule {}
