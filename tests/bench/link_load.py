#!/usr/bin/env python3
"""tests/bench/link_load.py: a background NVLink load of a chosen rate, for measuring what a data-parallel
step's bytes cost a step that has no collective (tests/bench/device_link_floor.sh). One process per
direction: GPU --gpu pulls from GPU --peer with peer copies on the copy engines (no SM kernel), in chunks of
--chunk-mb, paced to --gbps (0: as fast as it goes), for --seconds or until SIGTERM / SIGINT; --idle copies
nothing (the process and its CUDA contexts on both GPUs present, as a control). At most two
chunks are queued, so the pace holds within a chunk. Prints one line at the end:

  LINK_LOAD {"gpu": 0, "peer": 1, "target_GBps": 60.0, "GB": ..., "seconds": ..., "GBps": ...}

GB are 1e9 bytes received by --gpu. Two processes (0 <- 1 and 1 <- 0) load both directions, as an all-to-all
or all-gather of two ranks does; one process with two streams would not: PyTorch's cross-device copies
order themselves on the devices' current streams (tests/bench/energy_per_byte.py, nvlink_both)."""
import argparse
import json
import signal
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", type=int, required=True)
    ap.add_argument("--peer", type=int, required=True)
    ap.add_argument("--gbps", type=float, default=0.0, help="target GB/s received (0: unpaced)")
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--chunk-mb", type=int, default=64)
    ap.add_argument("--idle", action="store_true", help="copy nothing: the contexts and buffers only")
    a = ap.parse_args()
    if a.gpu == a.peer or max(a.gpu, a.peer) >= torch.cuda.device_count():
        raise SystemExit(f"link_load: --gpu {a.gpu} --peer {a.peer}: need two different GPUs of "
                         f"{torch.cuda.device_count()} visible")
    if not torch.cuda.can_device_access_peer(a.gpu, a.peer):
        raise SystemExit(f"link_load: GPU {a.gpu} cannot access GPU {a.peer} (no peer access)")
    stop = []
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: stop.append(1))
    n = a.chunk_mb << 20
    src = torch.empty(n, dtype=torch.uint8, device=f"cuda:{a.peer}").fill_(7)
    dst = torch.empty(n, dtype=torch.uint8, device=f"cuda:{a.gpu}")
    stream = torch.cuda.Stream(device=a.gpu)
    torch.cuda.synchronize(a.gpu)
    torch.cuda.synchronize(a.peer)
    done = [torch.cuda.Event() for _ in range(2)]
    sent, k, t0 = 0, 0, time.perf_counter()
    while not stop:
        now = time.perf_counter() - t0
        if now >= a.seconds:
            break
        if a.idle:
            time.sleep(0.01)
            continue
        if a.gbps > 0 and sent >= a.gbps * 1e9 * now:
            time.sleep(min(0.0005, max(0.0, sent / (a.gbps * 1e9) - now)))
            continue
        ev = done[k & 1]
        if k >= 2:
            ev.synchronize()  # the chunk queued two copies ago has landed: at most two in flight
        with torch.cuda.device(a.gpu), torch.cuda.stream(stream):
            dst.copy_(src, non_blocking=True)
            ev.record(stream)
        sent += n
        k += 1
    stream.synchronize()
    t = time.perf_counter() - t0
    print("LINK_LOAD " + json.dumps({"gpu": a.gpu, "peer": a.peer, "target_GBps": a.gbps, "GB": sent / 1e9,
                                     "seconds": t, "GBps": sent / 1e9 / t}), flush=True)


if __name__ == "__main__":
    main()
