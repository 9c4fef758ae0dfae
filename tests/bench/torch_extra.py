#!/usr/bin/env python3
"""tests/bench/torch_extra.py: PyTorch baselines the shared anchor script does not measure, run in the same
device call as ours. Prints one JSON object per line prefixed with "TORCH ".

  --gemm        bf16 matmuls of the XL training step's shapes (M, N, K as the plan names them), TFLOP/s
  --attention   SDPA (causal, batch 1, 16 heads) for d in 16/32/64/128 x seq 256..16384 (+32768, 65536),
                bf16 and fp32, forward and forward+backward, OOM reported as such: the grid of
                ddpbench_kernels' flash attention
  --xl-energy   the anchor's XL step (torch_ddp_anchor.py's model, autocast bf16, fused AdamW; --compile for
                torch.compile): ms/step and the GPU's joules per step from NVML's energy counter (ctypes), as
                ddprun's metrics give them: a thread polls the counter every 20 ms during the timed steps and
                notes when it moves (about every 0.1 s); the mean power between its first and last move inside
                the timed steps, times the wall time per step, is J/step
  --ceiling S   the dense bf16 ceiling two ways: PyTorch's 8192^3 GEMM as torch_ddp_anchor.py measures it (3
                warm-up, the median of 20: a burst of 30 ms, before the power limiter acts), then the same GEMM
                back to back for S seconds in windows of 40, with each window's TFLOP/s and SM clock (NVML);
                the sustained ceiling is the median of the windows after the first 2 s, where the limiter has
                settled, as it has in a training run's timed steps; W is the mean power over those windows
  --seeds       the course's grid: batch 8, one head, no mask
  --sdpa-shape  SDPA, bf16, causal, at one (batch, heads, T, d) shape
Timing: --attention, --seeds and --sdpa-shape by GPU time: runs queued back to back behind a GPU sleep (so the
host's launch and autograd time is not in them), each backward from no gradients; --host-time gives the grids'
earlier method (CUDA events around each Python call, median), which at short sequences measures the host.
--gemm: CUDA events around each repetition after warm-up, median."""
import argparse
import ctypes
import json
import os
import statistics
import sys
import threading
import time
import torch
import torch.nn.functional as F


def emit(**kw):
    print("TORCH " + json.dumps(kw), flush=True)


def timed(fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


# The XL step's GEMMs (d 1600, ff 6400, vocab 10000, 2048 tokens): name, M, N, K, A transposed, B transposed.
XL_GEMMS = [
    ("qkv_proj", 2048, 4800, 1600, 0, 1), ("output_proj", 2048, 1600, 1600, 0, 1),
    ("ffn.w13", 2048, 12800, 1600, 0, 1), ("ffn.w2", 2048, 1600, 6400, 0, 1), ("lm_head", 2048, 10000, 1600, 0, 1),
    ("qkv_proj.dW", 4800, 1600, 2048, 1, 0), ("output_proj.dW", 1600, 1600, 2048, 1, 0),
    ("ffn.w13.dW", 12800, 1600, 2048, 1, 0), ("ffn.w2.dW", 1600, 6400, 2048, 1, 0),
    ("lm_head.dW", 10000, 1600, 2048, 1, 0),
    ("qkv_proj.dx", 2048, 1600, 4800, 0, 0), ("output_proj.dx", 2048, 1600, 1600, 0, 0),
    ("ffn.w13.dx", 2048, 1600, 12800, 0, 0), ("ffn.w2.dx", 2048, 6400, 1600, 0, 0),
    ("lm_head.dx", 2048, 1600, 10000, 0, 0),
]


def gemms():
    for name, m, n, k, ta, tb in XL_GEMMS:
        a = torch.randn(k, m, device="cuda", dtype=torch.bfloat16).t() if ta else \
            torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t() if tb else \
            torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ms = timed(lambda: a @ b, 5, 20)
        emit(kind="gemm", name=name, M=m, N=n, K=k, ms=ms, TFLOPs=2 * m * n * k / ms / 1e9)


GPU_TIME = True  # the grids by gpu_timed (GPU time, gradients not accumulated); --host-time: by timed, as before


def sdpa_runs(shape, dt, causal, fresh):
    """SDPA's forward and forward + backward on random (batch, heads, T, d) tensors, as two functions; with
    fresh the backward starts from no gradients (so no accumulation of them is timed)."""
    q, k, v = (torch.randn(*shape, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
    go = torch.randn(*shape, device="cuda", dtype=dt)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def both():
        if fresh:
            q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(go)
    return fwd, both


def sdpa_record(rec, shape, dt, causal, reps):
    """Times SDPA forward and forward+backward on random (batch, heads, T, d) tensors into rec, with the
    forward's TFLOP/s, then emits it (an OOM or a missing kernel is recorded instead). With GPU_TIME the
    times are GPU time (gpu_timed) and each backward starts from no gradients."""
    b, h, t, d = shape
    fwd = both = None
    try:
        fwd, both = sdpa_runs(shape, dt, causal, GPU_TIME)
        clock = gpu_timed if GPU_TIME else timed
        rec["fwd_ms"] = clock(fwd, 2, reps)
        rec["fwd_bwd_ms"] = clock(both, 2, reps)
        rec["timing"] = "gpu" if GPU_TIME else "host"
        rec["bwd_ms"] = rec["fwd_bwd_ms"] - rec["fwd_ms"]
        rec["fwd_TFLOPs"] = 4 * b * h * t * t * d / (2 if causal else 1) / rec["fwd_ms"] / 1e9
    except torch.OutOfMemoryError:
        rec["oom"] = True
    except RuntimeError as e:  # no kernel for this dtype/size
        rec["error"] = str(e).splitlines()[0][:160]
    emit(**rec)
    fwd = both = None  # the tensors they hold, before the cache is emptied
    torch.cuda.empty_cache()


def attention(quick=False):
    dims = (64, 128) if quick else (16, 32, 64, 128)
    seqs = (1024, 4096, 16384) if quick else (256, 1024, 4096, 8192, 16384, 32768, 65536)
    for dt_name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for d in dims:
            for t in seqs:
                rec = dict(kind="attention", impl="torch_sdpa", dtype=dt_name, d=d, T=t, heads=16, causal=True)
                sdpa_record(rec, (1, 16, t, d), dt, True, 3 if t >= 32768 else 10)


def gpu_timed(fn, warmup=3, reps=50):
    """Per-run GPU time of fn (ms) over reps back-to-back runs queued behind a GPU sleep, so that the host's
    launch and autograd time is not in it: the measure for kernels of a few tens of microseconds."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time: long enough for the host to queue every run
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


def shape_arg(spec):
    """--sdpa-shape's B:H:T:D, four positive integers (argparse's type: a bad one is a one-line usage error)."""
    try:
        dims = tuple(int(x) for x in spec.split(":"))
    except ValueError:
        dims = ()
    if len(dims) != 4 or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"wants B:H:T:D, four positive integers, e.g. 4:25:512:64 (got {spec})")
    return dims


def sdpa_shape(dims):
    """SDPA at one (batch, heads, T, d) shape, bf16, causal, by GPU time (gpu_timed): e.g. XL's 4:25:512:64."""
    b, h, t, d = dims
    fwd, both = sdpa_runs((b, h, t, d), torch.bfloat16, True, True)
    rows = []
    for _ in range(3):  # three rounds, fwd and fwd+bwd alternating
        rows.append((gpu_timed(fwd), gpu_timed(both)))
    f = statistics.median(r[0] for r in rows)
    fb = statistics.median(r[1] for r in rows)
    flop = 4 * b * h * t * t * d / 2
    emit(kind="sdpa_shape", impl="torch_sdpa", dtype="bf16", batch=b, heads=h, T=t, d=d, causal=True,
         fwd_ms=f, fwd_bwd_ms=fb, bwd_ms=fb - f, fwd_TFLOPs=flop / f / 1e9, fwd_bwd_TFLOPs=3.5 * flop / fb / 1e9,
         rounds=[[round(x, 5) for x in r] for r in rows])


def seeds():
    """The course's grid: batch 8, one head, no mask, head dims 16-128, sequences 256-16384, bf16 and fp32."""
    for dt_name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        for d in (16, 32, 64, 128):
            for t in (256, 1024, 4096, 8192, 16384):
                rec = dict(kind="seeds_attention", impl="torch_sdpa", dtype=dt_name, d=d, T=t, batch=8, heads=1)
                sdpa_record(rec, (8, 1, t, d), dt, False, 10)


def nvml_device(cuda_index=None):
    """(libnvidia-ml, the handle of CUDA device cuda_index's GPU; None: the current device)."""
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    if lib.nvmlInit_v2() != 0:
        raise RuntimeError("nvmlInit_v2 failed")
    dev = ctypes.c_void_p()
    index = torch.cuda.current_device() if cuda_index is None else cuda_index
    props = torch.cuda.get_device_properties(index)
    try:  # the CUDA device's own GPU; NVML's index where this torch has no PCI ids
        busid = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0".encode()
        rc = lib.nvmlDeviceGetHandleByPciBusId_v2(busid, ctypes.byref(dev))
    except AttributeError:
        busid, rc = None, lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(dev))
    if rc != 0:
        raise RuntimeError(f"NVML has no handle for the CUDA device ({busid!r}): {rc}")
    return lib, dev


def nvml_energy(cuda_index=None):
    """A function returning the energy counter of CUDA device cuda_index's GPU (None: the current device) in
    joules (NVML, mJ since the driver loaded)."""
    lib, dev = nvml_device(cuda_index)

    def read():
        mj = ctypes.c_ulonglong()
        if lib.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj)) != 0:
            raise RuntimeError("nvmlDeviceGetTotalEnergyConsumption failed")
        return mj.value / 1000.0
    return read


def xl_energy(compile_, steps, warmup):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_ddp_anchor as A
    d, dff, L, h = A.SIZES["xl"]
    vocab, ctx, batch = 10000, 512, 4
    torch.manual_seed(0)
    model = A.LM(vocab, d, dff, L, h, ctx).cuda()
    if compile_:
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, vocab, (batch, ctx), device="cuda")
    y = torch.randint(0, vocab, (batch, ctx), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        F.cross_entropy(logits.float().view(-1, vocab), y.view(-1)).backward()
        opt.step(); opt.zero_grad(set_to_none=False)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    energy = nvml_energy()
    moves, stop = [], threading.Event()  # (time, joules) where the counter moved

    def poll():
        last = energy()
        while not stop.wait(0.02):
            e = energy()
            if e != last:
                moves.append((time.perf_counter(), e))
                last = e

    sampler = threading.Thread(target=poll)
    sampler.start()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    stop.set()
    sampler.join()
    inside = [m for m in moves if t0 <= m[0] <= t1]
    if len(inside) < 2:
        raise RuntimeError(f"the energy counter moved {len(inside)} times in {t1 - t0:.2f} s: too few steps")
    watts = (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
    ms = (t1 - t0) * 1e3 / steps
    emit(kind="xl_energy", compile=compile_, steps=steps, ms_per_step=ms, J_per_step=watts * ms / 1e3, W=watts,
         counter_moves=len(inside))


def ceiling(seconds):
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(m)
    flop = 2 * 8192**3
    gemm = lambda: torch.matmul(m, m, out=out)
    burst = flop / timed(gemm, 3, 20) / 1e9
    emit(kind="ceiling_burst", what="gemm_bf16_8192", TFLOPs=burst)
    lib, dev = nvml_device()
    energy = nvml_energy()

    def clock():
        mhz = ctypes.c_uint()
        return mhz.value if lib.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(mhz)) == 0 else None  # 1: NVML_CLOCK_SM

    windows, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(40):
            gemm()
        b.record()
        b.synchronize()
        windows.append(dict(t=round(time.perf_counter() - t0, 3), TFLOPs=round(40 * flop / a.elapsed_time(b) / 1e9, 1),
                            sm_MHz=clock(), J=energy()))
    steady = [w for w in windows if w["t"] > 2.0]
    if len(steady) < 2:
        raise RuntimeError(f"--ceiling {seconds}: fewer than two windows after the first 2 s")
    watts = (steady[-1]["J"] - steady[0]["J"]) / (steady[-1]["t"] - steady[0]["t"])  # NVML's counter moves every ~0.1 s
    for w in windows:
        del w["J"]
    emit(kind="ceiling_sustained", what="gemm_bf16_8192", seconds=seconds,
         TFLOPs=statistics.median(w["TFLOPs"] for w in steady), min_TFLOPs=min(w["TFLOPs"] for w in steady),
         first_window_TFLOPs=windows[0]["TFLOPs"], burst_TFLOPs=burst, W=round(watts, 1),
         sm_MHz=statistics.median(w["sm_MHz"] or 0 for w in steady), windows=windows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemm", action="store_true")
    ap.add_argument("--attention", action="store_true")
    ap.add_argument("--quick", action="store_true", help="attention: d 64 and 128, T 1024, 4096, 16384 only")
    ap.add_argument("--seeds", action="store_true", help="the course's grid: batch 8, one head, no mask")
    ap.add_argument("--sdpa-shape", metavar="B:H:T:D", type=shape_arg, help="SDPA, bf16, causal, at one shape by GPU time")
    ap.add_argument("--gpu-time", action="store_true",
                    help="--attention and --seeds by GPU time (runs queued behind a GPU sleep): the default")
    ap.add_argument("--host-time", action="store_true",
                    help="--attention and --seeds by an event pair around each Python call, the method before "
                         "2026-11-28, which counts PyTorch's launch and autograd time")
    ap.add_argument("--xl-energy", action="store_true", help="the anchor's XL step: ms and joules per step")
    ap.add_argument("--compile", action="store_true", help="--xl-energy under torch.compile")
    ap.add_argument("--steps", type=int, default=30, help="--xl-energy: timed steps (after 5 warm-up)")
    ap.add_argument("--ceiling", type=float, default=0, metavar="S",
                    help="the 8192^3 bf16 GEMM as a burst and sustained for S seconds")
    a = ap.parse_args()
    global GPU_TIME
    if a.gpu_time and a.host_time:
        ap.error("--gpu-time and --host-time exclude each other")
    GPU_TIME = not a.host_time
    emit(kind="device", name=torch.cuda.get_device_name(), torch=torch.__version__)
    if a.gemm:
        gemms()
    if a.attention:
        attention(a.quick)
    if a.seeds:
        seeds()
    if a.sdpa_shape:
        sdpa_shape(a.sdpa_shape)
    if a.xl_energy:
        xl_energy(a.compile, a.steps, 5)
    if a.ceiling > 0:
        ceiling(a.ceiling)


if __name__ == "__main__":
    main()
