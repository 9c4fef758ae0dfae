#!/usr/bin/env python3
"""tests/bench/torch_tp.py: the PyTorch baseline of the tensor-parallel benchmark (tests/bench/tensor_2gpu.sh):
the transformer of torch_ddp_anchor.py (RMSNorm, RoPE, SwiGLU, untied head; SIZES, RMSNorm and RoPE imported
from it) with separate q, k and v projections (nn.Linear(d, d) each: the anchor's fused qkv cannot be
split by columns into whole heads), context 512, vocab 10000, random tokens, AdamW as in
schedules/lib/xl_setup.lua (lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1), bf16 autocast over fp32
parameters (as torch_fsdp.py's ddp mode), trained under

  tp   DTensor tensor parallelism over all the ranks (torch.distributed.tensor.parallel.parallelize_module on
       a 1-D mesh), Megatron-style as TorchTitan's plan without sequence parallelism: per block q/k/v and
       w1/w3 ColwiseParallel, o and w2 RowwiseParallel (one all-reduce after each in the forward), the
       attention on its h/T local heads (the projections' local outputs viewed with -1 heads); the inputs of
       the attention and of the FFN made replicated DTensors once by PrepareModuleInput, so the backward
       all-reduces each block input's gradient once (not once per projection); the embedding
       RowwiseParallel(input_layouts=Replicate()) (vocabulary rows, all-reduced output); the head
       ColwiseParallel(output_layouts=Shard(-1)) with loss_parallel() for the cross-entropy (vocabulary-
       parallel: the logits are never gathered). The norms stay plain (replicated) tensors with their own
       AdamW. The whole group trains --batch sequences per step (every rank sees the same ones).
  ddp  DistributedDataParallel (25 MB buckets, gradient_as_bucket_view) of the same model: --batch sequences
       per rank, for reference.

Where a part is refused by this torch, a tp run falls back, in this order, and says so in a "note" line and
in the result's `config`: fused AdamW -> foreach; PrepareModuleInput -> each projection converts its own
input (three all-reduces of the attention input's gradient, two of the FFN's); loss_parallel -> the head
ColwiseParallel(output_layouts=Replicate()) (the logits all-gathered, a plain cross-entropy) and the
embedding ColwiseParallel (embedding-dimension shards, output all-gathered). An out-of-memory error is
reported without retrying.

Launch: torchrun --nproc_per_node=2 tests/bench/torch_tp.py --size large --modes tp,ddp
        (--size may be a comma list; --runs large:tp,2.7b:tp instead of --size/--modes)
Each run prints one line "TORCH_TP {json}" on rank 0: mode, size, world, tp (tensor ranks), ms_per_step
(median over --iters steps after --warmup, CUDA events around each step on every rank; rank 0's median,
every rank's in rank_ms), min/max ms, tokens_per_s (the tokens the whole group trains per step over the
step: tp --batch x ctx, ddp world x --batch x ctx), peak_alloc_GiB and peak_reserved_GiB per rank
(max_memory_allocated / max_memory_reserved over the timed steps), loss (the last) and loss_first (the first
warmup step's), params (global), local_q_weight (rank 0's shard of block 0's q weight), logits_dtype
(bfloat16 when autocast reached the head's GEMM), opt_impl, config (the tp choices taken), amp, torch; a
failed run prints its line with "error" (the exception's text) and the next run still runs. --budget-s skips runs that would
start after that many seconds (decided on rank 0, so every rank skips the same)."""
import argparse
import contextlib
import gc
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ddp_anchor import SIZES, RMSNorm, apply_rope, rope_tables  # noqa: E402  (the anchor's model parts)
from torch_fsdp import timed_steps  # noqa: E402  (the same warm-up, CUDA-event timing and peak memory)

T0 = time.time()


def emit(**kw):
    if dist.get_rank() == 0:
        print("TORCH_TP " + json.dumps(kw), flush=True)


def dtensor_api():
    """(DTensor, Replicate, Shard) from torch.distributed.tensor (torch >= 2.5) or its private predecessor."""
    try:
        from torch.distributed.tensor import DTensor, Replicate, Shard
    except ImportError:
        from torch.distributed._tensor import DTensor, Replicate, Shard
    return DTensor, Replicate, Shard


class Attention(nn.Module):
    """Causal self-attention with RoPE; q, k, v, o separate. Under TP q/k/v return this rank's columns, i.e.
    h/T whole heads, so the head count is taken from the local width (view with -1)."""

    def __init__(self, d, h):
        super().__init__()
        self.dh = d // h
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, y, cos, sin):
        B, T = y.shape[0], y.shape[1]
        q = self.q(y).view(B, T, -1, self.dh).transpose(1, 2)
        k = self.k(y).view(B, T, -1, self.dh).transpose(1, 2)
        v = self.v(y).view(B, T, -1, self.dh).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(a.transpose(1, 2).reshape(B, T, -1))


class FFN(nn.Module):
    def __init__(self, d, dff):
        super().__init__()
        self.w1 = nn.Linear(d, dff, bias=False)
        self.w3 = nn.Linear(d, dff, bias=False)
        self.w2 = nn.Linear(dff, d, bias=False)

    def forward(self, y):
        return self.w2(F.silu(self.w1(y)) * self.w3(y))


class Block(nn.Module):
    def __init__(self, d, dff, h):
        super().__init__()
        self.n1 = RMSNorm(d)
        self.attn = Attention(d, h)
        self.n2 = RMSNorm(d)
        self.ffn = FFN(d, dff)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.n1(x), cos, sin)
        return x + self.ffn(self.n2(x))


class LM(nn.Module):
    """torch_ddp_anchor.LM with separate q/k/v (the same math and initialisation scheme)."""

    def __init__(self, vocab, d, dff, L, h):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, dff, h) for _ in range(L))
        self.nf = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.dh = d // h

    def forward(self, idx):
        cos, sin = rope_tables(idx.shape[1], self.dh, idx.device)
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.head(self.nf(x))


# The tp configurations tried in turn (each later one avoids one more optional part).
TP_CONFIGS = [
    dict(prep=True, loss="parallel", opt="fused"),
    dict(prep=True, loss="parallel", opt="foreach"),
    dict(prep=False, loss="parallel", opt="foreach"),
    dict(prep=False, loss="replicated", opt="foreach"),
]


def parallelize_tp(model, mesh, cfg):
    """Applies the Megatron plan to `model` in place (see the module's docstring)."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    _, Replicate, Shard = dtensor_api()
    for blk in model.blocks:
        plan = {
            "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
            "attn.o": RowwiseParallel(),
            "ffn.w1": ColwiseParallel(), "ffn.w3": ColwiseParallel(),
            "ffn.w2": RowwiseParallel(),
        }
        if cfg["prep"]:
            from torch.distributed.tensor.parallel import PrepareModuleInput
            plan["attn"] = PrepareModuleInput(input_layouts=(Replicate(), None, None),
                                              desired_input_layouts=(Replicate(), None, None), use_local_output=False)
            plan["ffn"] = PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Replicate(),),
                                             use_local_output=False)
        parallelize_module(blk, mesh, plan)
    if cfg["loss"] == "parallel":
        root = {"emb": RowwiseParallel(input_layouts=Replicate()),
                "head": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False)}
    else:
        root = {"emb": ColwiseParallel(output_layouts=Replicate()),
                "head": ColwiseParallel(output_layouts=Replicate())}
    parallelize_module(model, mesh, root)
    return model


def make_optimizers(groups, impl):
    kw = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    out = []
    for params in groups:
        if params:
            out.append(torch.optim.AdamW(params, fused=True, **kw) if impl == "fused"
                       else torch.optim.AdamW(params, foreach=True, **kw))
    return out


def plain(t):
    """A DTensor's full value as a torch.Tensor (the loss under loss_parallel is a replicated DTensor)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def run(args, size, mode, cfg, world, rank):
    d, dff, L, h = SIZES[size]
    if mode == "tp":
        for what, v in (("heads", h), ("d_ff", dff), ("vocab", args.vocab)):
            if v % world:
                raise ValueError(f"{size}: {what} = {v} is not divisible by the {world} tensor ranks")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LM(args.vocab, d, dff, L, h)
    nparams = sum(p.numel() for p in model.parameters())
    loss_ctx = contextlib.nullcontext
    if mode == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("tp",))
        parallelize_tp(model, mesh, cfg)
        if cfg["loss"] == "parallel":
            from torch.distributed.tensor.parallel import loss_parallel
            loss_ctx = loss_parallel
        DTensor = dtensor_api()[0]
        dist_params = [p for p in model.parameters() if isinstance(p, DTensor)]
        local_params = [p for p in model.parameters() if not isinstance(p, DTensor)]
        # fused/foreach AdamW refuse lists mixing DTensors and plain tensors: one optimizer for each kind
        opts = make_optimizers([dist_params, local_params], cfg["opt"])
        q = model.blocks[0].attn.q.weight
        local_q = list(q.to_local().shape) if isinstance(q, DTensor) else list(q.shape)
        wrapped, seed, tokens = model, 1, args.batch * args.ctx  # every tensor rank loads the same sequences
    else:
        from torch.nn.parallel import DistributedDataParallel as DDP
        wrapped = DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True)
        opts = make_optimizers([list(model.parameters())], cfg["opt"])
        local_q, seed, tokens = None, rank + 1, args.batch * args.ctx * world
    gc.collect()  # the whole-model tensors parallelize_module replaced by shards: out of the peak reserved
    torch.cuda.empty_cache()
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)
    y = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)

    seen = {}

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = wrapped(x)
        seen.setdefault("logits", str(logits.dtype).replace("torch.", ""))  # bfloat16: autocast reached the head
        with loss_ctx():
            loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(0, 1))
            loss.backward()
        for o in opts:
            o.step()
        for o in opts:
            o.zero_grad(set_to_none=mode != "ddp")
        return loss

    first, loss, ms, every = timed_steps(step, args.warmup, args.iters, world)
    med = every[0]["ms"]
    emit(mode=mode, size=size, world=world, tp=world if mode == "tp" else 1, ctx=args.ctx, batch=args.batch,
         warmup=args.warmup, iters=args.iters, ms_per_step=med, min_ms=ms[0], max_ms=ms[-1],
         rank_ms=[e["ms"] for e in every], tokens_per_step=tokens, tokens_per_s=tokens / (med * 1e-3),
         peak_alloc_GiB=[e["alloc"] for e in every], peak_reserved_GiB=[e["reserved"] for e in every],
         loss=float(plain(loss).float().item()),
         loss_first=float(plain(first).float().item()) if first is not None else None,
         params=nparams, local_q_weight=local_q, logits_dtype=seen.get("logits"), opt_impl=cfg["opt"],
         config=({"prepare_module_input": cfg["prep"], "loss": cfg["loss"],
                  "embedding": "rowwise" if cfg["loss"] == "parallel" else "colwise"} if mode == "tp" else None),
         amp="autocast bf16", torch=torch.__version__)
    # the model, optimizers and batch go with this frame; main() collects and empties the cache after it


def configs(mode, optimizer):
    if mode == "ddp":
        out = [dict(prep=False, loss="plain", opt=optimizer)]
        return out + ([dict(prep=False, loss="plain", opt="foreach")] if optimizer == "fused" else [])
    return [c for c in TP_CONFIGS if optimizer == "fused" or c["opt"] == "foreach"]


def within_budget(args):
    """Rank 0 decides whether there is time for another run; every rank follows it."""
    ok = [args.budget_s <= 0 or time.time() - T0 < args.budget_s]
    dist.broadcast_object_list(ok, src=0)
    return ok[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="tp,ddp", help="comma list of tp, ddp")
    ap.add_argument("--size", default="large", help="comma list of " + ", ".join(sorted(SIZES)))
    ap.add_argument("--runs", default="", help="comma list of SIZE:MODE (instead of --size and --modes)")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4,
                    help="sequences per step: per tensor-parallel group (tp), per rank (ddp)")
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--optimizer", choices=("fused", "foreach"), default="fused",
                    help="AdamW implementation (fused falls back to foreach, said so, where it fails)")
    ap.add_argument("--budget-s", type=float, default=0, help="skip runs starting after this many seconds (0: none)")
    args = ap.parse_args()
    if args.runs:
        runs = [tuple(r.split(":", 1)) for r in args.runs.split(",")]
    else:
        runs = [(s, m) for s in args.size.split(",") for m in args.modes.split(",")]
    for r in runs:
        if len(r) != 2 or r[0] not in SIZES or r[1] not in ("tp", "ddp"):
            ap.error(f"bad run {':'.join(r)}: sizes {', '.join(sorted(SIZES))}; modes tp, ddp")
    if args.iters < 1 or args.warmup < 1:
        ap.error("--iters >= 1 and --warmup >= 1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29543")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    for size, mode in runs:
        if not within_budget(args):
            emit(mode=mode, size=size, world=world, error=f"skipped: past the time budget of {args.budget_s:.0f} s")
            continue
        tried = configs(mode, args.optimizer)
        for i, cfg in enumerate(tried):
            failure = None
            try:
                run(args, size, mode, cfg, world, rank)
            except Exception as e:  # report, then go on (next configuration, or the next run)
                failure = f"{type(e).__name__}: {e}"
            # outside the except block, so the traceback (and the failed run's model) can be freed
            gc.collect()
            torch.cuda.empty_cache()
            if failure is None:
                break
            last = i + 1 == len(tried) or "out of memory" in failure.lower() or "not divisible" in failure
            if last:
                emit(mode=mode, size=size, world=world, error=failure[:2000], config=cfg)
                break
            emit(mode=mode, size=size, world=world, config=cfg,
                 note=f"failed ({failure[:1000]}); trying {json.dumps(tried[i + 1])}")
            dist.barrier()
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
