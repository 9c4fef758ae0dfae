#!/usr/bin/env python3
"""tests/bench/energy_per_byte.py: what moving a byte costs a GPU in joules, for reading the data-parallel
steps' energy (at the power limit a joule is time). Each activity runs WARM seconds, then SECONDS measured:
its throughput and every GPU's mean power from NVML's energy counter (read at the window's ends; the counter
moves about every 0.1 s, so a 6 s window is within about 2%), and the joules per GB above that GPU's idle
power. Prints one "ENERGY {json}" line per activity and GPU, then a table.

  python3 energy_per_byte.py [--seconds 6]        one process, GPUs 0 and 1 (GPU 0 alone where one is visible):
    idle         nothing: each GPU's baseline
    hbm_copy     GPU 0: b.copy_(a) of 1 GiB on the device (GB = bytes read + bytes written)
    gemm         GPU 0: the 8192^3 bf16 GEMM (J per TFLOP, to set the bytes against)
    nvlink_pull  GPU 0 pulls 1 GiB from GPU 1 (a peer copy on the copy engines; GB = bytes moved)
    nvlink_both  GPU 0 pulls from GPU 1 and GPU 1 from GPU 0, each on its own stream (GB = each GPU's
                 received bytes; PyTorch's cross-device copies serialised them on 2 x H200, 2026-11-28)
  torchrun --nproc_per_node=N energy_per_byte.py --nccl [--seconds 6]
    nccl_all_reduce  every rank all-reduces 256 MiB of fp32 (NCCL's SM kernels); GB = the ring's bus bytes a
                 rank sends, 2 (N - 1) / N of the buffer; each rank reports its own GPU
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_extra import nvml_energy  # noqa: E402  (the same NVML reading as the XL energy run)

GIB = 1 << 30


class Nvml:
    """Each CUDA device's energy counter in joules (torch_extra.nvml_energy: NVML, matched by PCI bus id)."""

    def __init__(self):
        self.read = {}

    def joules(self, cuda_index):
        if cuda_index not in self.read:
            self.read[cuda_index] = nvml_energy(cuda_index)
        return self.read[cuda_index]()


def run(nvml, gpus, batch, warm, seconds, over=lambda elapsed, limit: elapsed >= limit):
    """batch() queues about 50 ms of work and returns its units (GB or TFLOP); runs it warm s, then seconds s
    measured, each phase until over(elapsed, limit) after a batch (ranks of a collective must agree on it).
    Returns (units per second, {gpu: mean W})."""
    def sync():
        for g in gpus:
            torch.cuda.synchronize(g)
    t0 = time.perf_counter()
    while True:
        batch()
        sync()
        if over(time.perf_counter() - t0, warm):
            break
    e0 = {g: nvml.joules(g) for g in gpus}
    t0, units = time.perf_counter(), 0.0
    while True:
        units += batch()
        sync()
        if over(time.perf_counter() - t0, seconds):
            break
    t1 = time.perf_counter()
    e1 = {g: nvml.joules(g) for g in gpus}
    return units / (t1 - t0), {g: (e1[g] - e0[g]) / (t1 - t0) for g in gpus}


def emit(**kw):
    print("ENERGY " + json.dumps(kw), flush=True)


def one_process(nvml, seconds, warm):
    n = min(torch.cuda.device_count(), 2)
    gpus = list(range(n))
    idle = run(nvml, gpus, lambda: (time.sleep(0.05), 0.0)[1], 0.5, seconds)[1]
    for g in gpus:
        emit(activity="idle", gpu=g, W=idle[g])
    a = torch.empty(GIB // 2, dtype=torch.bfloat16, device="cuda:0").normal_()
    b = torch.empty_like(a)

    def hbm():
        for _ in range(20):
            b.copy_(a)
        return 20 * 2 * GIB / 1e9
    m = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda:0")
    out = torch.empty_like(m)

    def gemm():
        for _ in range(40):
            torch.matmul(m, m, out=out)
        return 40 * 2 * 8192**3 / 1e12
    acts = [("hbm_copy", "GB", [0], hbm), ("gemm", "TFLOP", [0], gemm)]
    if n == 2 and torch.cuda.can_device_access_peer(0, 1) and torch.cuda.can_device_access_peer(1, 0):
        a1 = torch.empty(GIB // 2, dtype=torch.bfloat16, device="cuda:1").normal_()
        b1 = torch.empty_like(a1)
        s0, s1 = torch.cuda.Stream(0), torch.cuda.Stream(1)

        def pull():
            with torch.cuda.stream(s0):
                for _ in range(10):
                    b.copy_(a1, non_blocking=True)
            s0.synchronize()
            return 10 * GIB / 1e9

        def both():
            with torch.cuda.stream(s0):
                for _ in range(10):
                    b.copy_(a1, non_blocking=True)
            with torch.cuda.stream(s1):
                for _ in range(10):
                    b1.copy_(a, non_blocking=True)
            s0.synchronize()
            s1.synchronize()
            return 10 * GIB / 1e9  # per GPU received
        acts += [("nvlink_pull", "GB", gpus, pull), ("nvlink_both", "GB", gpus, both)]
    elif n == 2:
        print("GPUs 0 and 1 have no peer access: no NVLink activities")
    rows = []
    for name, unit, on, batch in acts:
        rate, watts = run(nvml, on, batch, warm, seconds)
        for g in on:
            above = watts[g] - idle[g]
            emit(activity=name, gpu=g, unit=unit, per_s=rate, W=watts[g], W_above_idle=above,
                 J_per_unit=above / rate if rate > 0 else None)
            rows.append((name, g, rate, unit, watts[g], above))
    return idle, rows


def nccl(nvml, seconds, warm):
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    g = torch.cuda.current_device()
    dist.barrier()
    idle = run(nvml, [g], lambda: (time.sleep(0.05), 0.0)[1], 0.5, seconds)[1][g]
    x = torch.ones(64 << 20, dtype=torch.float32, device="cuda")
    bus_gb = 2 * (world - 1) / world * x.numel() * 4 / 1e9

    def batch():
        for _ in range(20):
            dist.all_reduce(x)
        return 20 * bus_gb
    flag = torch.zeros(1, device="cuda")

    def over(elapsed, limit):  # rank 0's clock ends every rank's phase after the same batch
        flag.fill_(1.0 if elapsed >= limit else 0.0)
        dist.broadcast(flag, 0)
        return flag.item() > 0
    dist.barrier()
    rate, watts = run(nvml, [g], batch, warm, seconds, over)
    above = watts[g] - idle
    emit(activity="nccl_all_reduce", rank=rank, world=world, gpu=g, unit="GB", per_s=rate, W=watts[g], idle_W=idle,
         W_above_idle=above, J_per_unit=above / rate)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--warm", type=float, default=1.5)
    ap.add_argument("--nccl", action="store_true", help="under torchrun: NCCL's all-reduce on every rank")
    a = ap.parse_args()
    nvml = Nvml()
    if a.nccl:
        nccl(nvml, a.seconds, a.warm)
        return
    idle, rows = one_process(nvml, a.seconds, a.warm)
    print(f"{'activity':12s} {'GPU':>3s} {'rate':>14s} {'W':>6s} {'idle W':>6s} {'above':>6s} {'J per unit':>11s}")
    for name, g, rate, unit, w, above in rows:
        print(f"{name:12s} {g:3d} {rate:9.1f} {unit:>3s}/s {w:6.0f} {idle[g]:6.0f} {above:6.0f} {above / rate:8.3f} J/{unit}")


if __name__ == "__main__":
    main()
