#!/usr/bin/env python3
"""tests/bench/torch_fsdp.py: the PyTorch baseline of the sharding benchmarks (issue 12): the XL transformer
of schedules/lib/xl_ddp.lua (the model of torch_ddp_anchor.py, imported from it: d_model 1600, d_ff 6400,
48 layers, 25 heads, context 512, vocab 10000, random tokens, 4 sequences per rank) with xl_ddp.lua's AdamW
(lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1), trained under

  ddp     DistributedDataParallel, 25 MB buckets (gradient_as_bucket_view), bf16 autocast, fp32 parameters
  fsdp2   torch.distributed.fsdp.fully_shard on every block and on the root, MixedPrecisionPolicy(param_dtype
          bf16, reduce_dtype fp32), reshard_after_forward per --reshard (true, false or both), optionally
          explicit prefetch of the next --prefetch blocks (0: FSDP2's own, one block ahead)

Launch: torchrun --nproc_per_node=N tests/bench/torch_fsdp.py [--modes ddp,fsdp2] [--reshard true,false]
(N = 1 or 2; plain `python3` runs one process). Each run prints one line "TORCH_FSDP {json}" on rank 0:
mode, reshard_after_forward, prefetch, world, ms_per_step (median over --iters steps after --warmup, CUDA
events around each step on every rank; rank 0's median, every rank's in rank_ms), min/max ms, tokens_per_s
(global), peak_alloc_GiB and peak_reserved_GiB per rank (torch.cuda.max_memory_allocated /
max_memory_reserved over the timed run, the model built and sharded before the counters are reset), the last
loss, the optimizer implementation. A run that fails prints its line with "error" and the others still run.
"""
import argparse
import gc
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ddp_anchor import LM, SIZES  # noqa: E402  (the same model as the DDP anchor)


def emit(**kw):
    if dist.get_rank() == 0:
        print("TORCH_FSDP " + json.dumps(kw), flush=True)


def make_optimizer(params, impl):
    kw = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    return torch.optim.AdamW(params, fused=True, **kw) if impl == "fused" else torch.optim.AdamW(params, foreach=True, **kw)


def build(args, mode, reshard, world):
    """The model (built on this rank's GPU with seed 0, as every rank) wrapped for `mode`."""
    d, dff, L, h = SIZES[args.size]
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LM(args.vocab, d, dff, L, h, args.ctx)
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True), model
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # torch < 2.6
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    blocks = list(model.blocks)
    for b in blocks:
        fully_shard(b, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    if args.prefetch > 0:
        n = args.prefetch
        for i, b in enumerate(blocks):
            b.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + n])
            b.set_modules_to_backward_prefetch(list(reversed(blocks[max(0, i - n):i])))
    return model, model


def timed_steps(step, warmup, iters, world):
    """Runs step() `warmup` times, then times `iters` more with a CUDA event pair each, peak memory counted
    from the first timed step. Returns the first warm-up step's loss (None without warm-up), the last loss,
    this rank's step times (ms, sorted) and every rank's {"ms": median, "alloc", "reserved": peak GiB}
    (all_gather_object over `world` ranks). Also used by torch_tp.py."""
    first = loss = None
    for i in range(warmup):
        loss = step()
        if i == 0:
            first = loss
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.reset_peak_memory_stats()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        a.record()
        loss = step()
        b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ev)
    mine = {"ms": statistics.median(ms), "alloc": torch.cuda.max_memory_allocated() / 2**30,
            "reserved": torch.cuda.max_memory_reserved() / 2**30}
    every = [None] * world
    dist.all_gather_object(every, mine)
    return first, loss, ms, every


def run(args, mode, reshard, world, rank, impl):
    model, inner = build(args, mode, reshard, world)
    opt = make_optimizer(model.parameters(), impl)
    g = torch.Generator(device="cuda").manual_seed(rank + 1)
    x = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)
    y = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)

    def step():
        if mode == "ddp":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(x)
        else:
            logits = model(x)  # bf16 compute through the MixedPrecisionPolicy
        loss = F.cross_entropy(logits.float().view(-1, args.vocab), y.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=mode != "ddp")
        return loss

    _, loss, ms, every = timed_steps(step, args.warmup, args.iters, world)
    med = every[0]["ms"]
    emit(mode=mode, reshard_after_forward=reshard if mode == "fsdp2" else None,
         prefetch=args.prefetch if mode == "fsdp2" else None, world=world, size=args.size, ctx=args.ctx,
         batch_per_rank=args.batch, warmup=args.warmup, iters=args.iters, ms_per_step=med,
         min_ms=ms[0], max_ms=ms[-1], rank_ms=[e["ms"] for e in every],
         tokens_per_s=args.batch * args.ctx * world / (med * 1e-3),
         peak_alloc_GiB=[e["alloc"] for e in every], peak_reserved_GiB=[e["reserved"] for e in every],
         loss=float(loss.item()), opt_impl=impl, torch=torch.__version__)
    del model, inner, opt
    gc.collect()
    torch.cuda.empty_cache()


def bools(text):
    out = []
    for t in text.split(","):
        if t.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"--reshard: '{t}' is neither true nor false")
        out.append(t.lower() == "true")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="ddp,fsdp2", help="comma list of ddp, fsdp2")
    ap.add_argument("--reshard", type=bools, default=[True, False], help="fsdp2 reshard_after_forward: true,false")
    ap.add_argument("--prefetch", type=int, default=0, help="fsdp2: explicit prefetch of this many blocks (0: FSDP2's)")
    ap.add_argument("--size", default="xl", choices=sorted(SIZES))
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4, help="sequences per rank")
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--optimizer", choices=("fused", "foreach"), default="fused",
                    help="AdamW implementation (fused falls back to foreach, said so, where it fails on fsdp2)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in ("ddp", "fsdp2"):
            ap.error(f"--modes: unknown mode '{m}' (ddp, fsdp2)")
    if args.iters < 1 or args.warmup < 0 or args.prefetch < 0:
        ap.error("--iters >= 1, --warmup >= 0 and --prefetch >= 0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    runs = [(m, r) for m in modes for r in (args.reshard if m == "fsdp2" else [None])]
    for mode, reshard in runs:
        impl = args.optimizer
        for attempt in (0, 1):
            failure = None
            try:
                run(args, mode, reshard, world, rank, impl)
            except Exception as e:  # report, then go on with the next run
                failure = f"{type(e).__name__}: {e}"
            # outside the except block, so the traceback (and the failed run's model) can be freed
            gc.collect()
            torch.cuda.empty_cache()
            if failure is None:
                break
            if attempt == 0 and impl == "fused" and mode == "fsdp2" and "fused" in failure.lower():
                emit(mode=mode, reshard_after_forward=reshard, note=f"fused AdamW failed ({failure}); foreach instead")
                impl = "foreach"
                continue
            emit(mode=mode, reshard_after_forward=reshard, world=world, error=failure)
            break
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
