#!/usr/bin/env python3
"""tests/bench/nvml_cost.py: what reading the GPU energy counters costs the host (NVML through ctypes, GPU 0):
milliseconds per nvmlDeviceGetTotalEnergyConsumption and per nvmlDeviceGetViolationStatus call, and how often the
energy counter moves (its values over one second), which DDP_ENERGY_PERIOD_MS and the metrics' spans rest on."""
import ctypes, time
lib = ctypes.CDLL("libnvidia-ml.so.1"); lib.nvmlInit_v2()
dev = ctypes.c_void_p(); lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev))
mj = ctypes.c_ulonglong(); v = (ctypes.c_ulonglong * 2)()
for name, f in (("energy", lambda: lib.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj))),
                ("violation", lambda: lib.nvmlDeviceGetViolationStatus(dev, 0, v))):
    t = time.perf_counter(); [f() for _ in range(200)]; print(f"nvml {name}: {(time.perf_counter() - t) / 200 * 1e3:.3f} ms a call")
vals, t0 = [], time.perf_counter()
while time.perf_counter() - t0 < 1.0:
    lib.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj))
    if not vals or vals[-1][1] != mj.value: vals.append((time.perf_counter() - t0, mj.value))
print("energy counter changes in 1 s (idle):", len(vals), "at", [round(a * 1e3) for a, _ in vals][:12])
