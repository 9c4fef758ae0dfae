#!/usr/bin/env python3
"""tests/bench/torch_pipeline.py: the PyTorch baseline of the pipeline benchmark (issue 13):
torch.distributed.pipelining on the XL transformer of torch_ddp_anchor.py (imported from it: d_model 1600,
d_ff 6400, 48 layers, 25 heads, context 512, vocab 10000, random tokens), cut into two stages of 24 blocks
each: the embedding with the first, the final norm, head and loss with the last (the split of
schedules/pipeline_*.lua). bf16 autocast over fp32 parameters (as xl_ddp.lua's precision), AdamW (lr 3e-4,
betas 0.9/0.95, eps 1e-8, weight decay 0.1, fused) on each stage's parameters.

Schedules: ScheduleGPipe and Schedule1F1B, each with --microbatches (default 4,8,16) microbatches of the
--batch sequences of a step (default 16; the batch of the pipeline's one replica, so every microbatch count
must divide it).

Launch: torchrun --nproc_per_node=2 tests/bench/torch_pipeline.py [--schedules gpipe,1f1b]
[--microbatches 4,8,16] [--batch 16] [--warmup 3] [--iters 10]. Each run prints one line
"TORCH_PIPE {json}" on rank 0: schedule, microbatches, stages, batch, ctx, ms_per_step (rank 0's median
over --iters steps after --warmup; a step = the schedule's step and the optimizer, between two
torch.cuda.synchronize()), rank_ms (every rank's median), min_ms, max_ms, tokens_per_s (batch x ctx over
the median), peak_alloc_GiB and peak_reserved_GiB per rank (torch.cuda.max_memory_allocated /
max_memory_reserved, counters reset after the stage was built), the last loss (last stage). A run that
fails prints its line with "error" and the others still run.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ddp_anchor import LM, SIZES, rope_tables  # noqa: E402  (the same model as the DDP anchor)


def emit(**kw):
    if dist.get_rank() == 0:
        print("TORCH_PIPE " + json.dumps(kw), flush=True)


class FirstStage(nn.Module):
    """The embedding and the first blocks; returns the residual stream."""

    def __init__(self, lm, blocks):
        super().__init__()
        self.emb, self.blocks, self.dh = lm.emb, nn.ModuleList(blocks), lm.dh

    def forward(self, idx):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            cos, sin = rope_tables(idx.shape[1], self.dh, idx.device)
            x = self.emb(idx)
            for b in self.blocks:
                x = b(x, cos, sin)
        return x.float()


class LastStage(nn.Module):
    """The last blocks, the final norm and the head; returns the logits (the loss is the schedule's loss_fn)."""

    def __init__(self, lm, blocks):
        super().__init__()
        self.blocks, self.nf, self.head, self.dh = nn.ModuleList(blocks), lm.nf, lm.head, lm.dh

    def forward(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            cos, sin = rope_tables(x.shape[1], self.dh, x.device)
            for b in self.blocks:
                x = b(x, cos, sin)
            return self.head(self.nf(x))


def build_stage(args, rank, world):
    """This rank's stage module (the full model built with seed 0, as every rank, then cut)."""
    d, dff, L, h = SIZES[args.size]
    torch.manual_seed(0)
    with torch.device("cuda"):
        lm = LM(args.vocab, d, dff, L, h, args.ctx)
    per = L // world
    blocks = list(lm.blocks)[rank * per:(rank + 1) * per if rank < world - 1 else L]
    mod = FirstStage(lm, blocks) if rank == 0 else LastStage(lm, blocks)
    del lm
    return mod


def make_pipeline_stage(mod, rank, world, args, mb_size, device):
    from torch.distributed.pipelining import PipelineStage
    try:  # torch >= 2.5 infers the shapes of what flows between stages at the first step
        return PipelineStage(mod, rank, world, device)
    except TypeError:  # torch 2.4 wants example inputs
        d = SIZES[args.size][0]
        ex = (torch.zeros(mb_size, args.ctx, dtype=torch.long, device=device) if rank == 0 else
              torch.zeros(mb_size, args.ctx, d, dtype=torch.float32, device=device))
        return PipelineStage(mod, rank, world, device, input_args=(ex,))


def run(args, sched, m, mod, opt, rank, world, device):
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe
    if args.batch % m:
        raise ValueError(f"{m} microbatches do not divide the batch of {args.batch}")
    stage = make_pipeline_stage(mod, rank, world, args, args.batch // m, device)

    def loss_fn(logits, y):
        return F.cross_entropy(logits.float().view(-1, args.vocab), y.view(-1))

    cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[sched]
    schedule = cls(stage, n_microbatches=m, loss_fn=loss_fn)
    g = torch.Generator(device=device).manual_seed(1)
    x = torch.randint(0, args.vocab, (args.batch, args.ctx), device=device, generator=g)
    y = torch.randint(0, args.vocab, (args.batch, args.ctx), device=device, generator=g)
    losses = []

    def step():
        losses.clear()
        if rank == 0:
            schedule.step(x)
        elif rank == world - 1:
            schedule.step(target=y, losses=losses)
        else:
            schedule.step()
        opt.step()
        opt.zero_grad(set_to_none=False)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(args.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(ts)
    loss = float(torch.stack(losses).mean()) if losses else None
    mine = [med, torch.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_reserved() / 2**30, loss]
    every = [None] * world
    dist.all_gather_object(every, mine)
    last_loss = every[world - 1][3]
    return dict(ms_per_step=med, rank_ms=[e[0] for e in every], min_ms=min(ts), max_ms=max(ts),
                tokens_per_s=args.batch * args.ctx / (med * 1e-3), peak_alloc_GiB=[e[1] for e in every],
                peak_reserved_GiB=[e[2] for e in every], loss=last_loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="xl")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=16, help="sequences per step (the pipeline's one replica)")
    ap.add_argument("--schedules", default="gpipe,1f1b")
    ap.add_argument("--microbatches", default="4,8,16")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 2:
        sys.exit("torch_pipeline.py: run under torchrun --nproc_per_node=2 (one stage per process)")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    try:
        dist.init_process_group("nccl", device_id=device)
    except TypeError:  # torch < 2.3 has no device_id
        dist.init_process_group("nccl")
    mod = build_stage(args, rank, world)
    opt = torch.optim.AdamW(mod.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
    base = dict(stages=world, batch=args.batch, ctx=args.ctx, size=args.size, torch=torch.__version__)
    for sched in args.schedules.split(","):
        for m in (int(v) for v in args.microbatches.split(",")):
            gc.collect()
            torch.cuda.empty_cache()
            try:
                r = run(args, sched, m, mod, opt, rank, world, device)
                emit(schedule=sched, microbatches=m, **base, **r)
            except Exception as e:  # noqa: BLE001  (the other runs still run)
                emit(schedule=sched, microbatches=m, **base, error=f"{type(e).__name__}: {e}"[:300])
                opt.zero_grad(set_to_none=False)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
