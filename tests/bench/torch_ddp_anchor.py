# tests/bench/torch_ddp_anchor.py: the PyTorch baselines, copied unchanged from the project's shared anchors
# (shared/anchors/torch_ddp_anchor.py) so device runs, which only see this repository, can measure them.
# Anchor measurements with PyTorch on the device: what a user of the seeds
# would run instead of our toolchain. Launch: torchrun --nproc_per_node=N this.py
# Prints one JSON line per measurement (prefix ANCHOR).
import os, sys, time, json, math, argparse
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

SIZES = {
    "small": (768, 3072, 12, 12),
    "medium": (1024, 4096, 24, 16),
    "large": (1280, 5120, 36, 20),
    "xl": (1600, 6400, 48, 25),
    "2.7b": (2560, 10240, 32, 32),
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * r).to(x.dtype) * self.weight


def rope_tables(T, D, device, theta=10000.0):
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=device).float() / D)
    t = torch.arange(T, device=device).float()
    f = torch.outer(t, inv)
    return f.cos(), f.sin()


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    o1 = x1 * cos - x2 * sin
    o2 = x1 * sin + x2 * cos
    return torch.stack((o1, o2), -1).flatten(-2).to(x.dtype)


class Block(nn.Module):
    def __init__(self, d, dff, h, naive_attn):
        super().__init__()
        self.h = h
        self.n1 = RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.n2 = RMSNorm(d)
        self.w1 = nn.Linear(d, dff, bias=False)
        self.w3 = nn.Linear(d, dff, bias=False)
        self.w2 = nn.Linear(dff, d, bias=False)
        self.naive_attn = naive_attn

    def forward(self, x, cos, sin):
        B, T, D = x.shape
        q, k, v = self.qkv(self.n1(x)).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.naive_attn:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.h)
            mask = torch.ones(T, T, device=x.device, dtype=torch.bool).tril()
            s = s.masked_fill(~mask, float("-inf"))
            a = torch.softmax(s.float(), -1).to(v.dtype) @ v
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        y = self.n2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class LM(nn.Module):
    def __init__(self, vocab, d, dff, L, h, ctx, naive_attn=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, dff, h, naive_attn) for _ in range(L))
        self.nf = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.ctx, self.dh = ctx, d // h

    def forward(self, idx):
        cos, sin = rope_tables(idx.shape[1], self.dh, idx.device)
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.head(self.nf(x))


def emit(**kw):
    if not dist.is_initialized() or dist.get_rank() == 0:
        print("ANCHOR " + json.dumps(kw), flush=True)


def timed(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2], ts


def allreduce_bench(world):
    for mb in (1, 10, 100, 1000):
        n = mb * 1024 * 1024 // 4
        t = torch.randn(n, device="cuda")
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        iters = 20 if mb < 1000 else 10
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / iters
        algbw = n * 4 / dt / 1e9
        emit(kind="allreduce", world=world, mb=mb, ms=dt * 1e3, algbw_GBs=algbw,
             busbw_GBs=algbw * 2 * (world - 1) / world)


def ddp_variants(args, world, rank):
    d, dff, L, h = SIZES[args.size]
    torch.manual_seed(0)
    model = LM(args.vocab, d, dff, L, h, args.ctx, args.naive_attn).cuda()
    if args.compile:
        model = torch.compile(model)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    g = torch.Generator(device="cuda").manual_seed(rank + 1)
    x = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)
    y = torch.randint(0, args.vocab, (args.batch, args.ctx), device="cuda", generator=g)
    params = [p for p in model.parameters()]
    comm_ms = []

    def fwd_bwd(m):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(x)
        loss = F.cross_entropy(logits.float().view(-1, args.vocab), y.view(-1))
        loss.backward()

    def step_local():
        fwd_bwd(model)
        opt.step(); opt.zero_grad(set_to_none=False)

    def step_naive():
        fwd_bwd(model)
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for p in params:
            dist.all_reduce(p.grad); p.grad.div_(world)
        torch.cuda.synchronize(); comm_ms.append((time.perf_counter() - t0) * 1e3)
        opt.step(); opt.zero_grad(set_to_none=False)

    def step_flat():
        fwd_bwd(model)
        torch.cuda.synchronize(); t0 = time.perf_counter()
        grads = [p.grad for p in params]
        flat = torch._utils._flatten_dense_tensors(grads)
        dist.all_reduce(flat); flat.div_(world)
        for gsrc, gdst in zip(torch._utils._unflatten_dense_tensors(flat, grads), grads):
            gdst.copy_(gsrc)
        torch.cuda.synchronize(); comm_ms.append((time.perf_counter() - t0) * 1e3)
        opt.step(); opt.zero_grad(set_to_none=False)

    handles = []

    def hook(p):
        p.grad.div_(world)
        handles.append(dist.all_reduce(p.grad, async_op=True))

    def step_individual():
        fwd_bwd(model)
        for hd in handles:
            hd.wait()
        handles.clear()
        opt.step(); opt.zero_grad(set_to_none=False)

    results = {}
    emit(kind="model", size=args.size, params=nparams, ctx=args.ctx, batch_per_rank=args.batch,
         world=world, naive_attn=args.naive_attn)
    for name, fn in (("local", step_local), ("naive", step_naive), ("flat", step_flat), ("local_again", step_local)):
        if world == 1 and name not in ("local", "local_again"):
            continue
        comm_ms.clear()
        med, ts = timed(fn, args.warmup, args.iters)
        results[name] = med
        emit(kind="ddp", variant=name, size=args.size, world=world, iter_ms=med * 1e3,
             comm_ms=(sorted(comm_ms)[len(comm_ms) // 2] if comm_ms else 0.0),
             min_ms=ts[0] * 1e3, max_ms=ts[-1] * 1e3,
             tokens_per_s=args.batch * args.ctx * world / med)
    if world > 1:
        hs = [p.register_post_accumulate_grad_hook(hook) for p in params]
        med, ts = timed(step_individual, args.warmup, args.iters)
        emit(kind="ddp", variant="individual", size=args.size, world=world, iter_ms=med * 1e3,
             min_ms=ts[0] * 1e3, max_ms=ts[-1] * 1e3, tokens_per_s=args.batch * args.ctx * world / med)
        for hh in hs:
            hh.remove()
        from torch.nn.parallel import DistributedDataParallel as DDP
        for cap in (1, 10, 25, 100, 1000):
            dm = DDP(model, bucket_cap_mb=cap, gradient_as_bucket_view=True)
            opt2 = torch.optim.AdamW(dm.parameters(), lr=1e-4, fused=True)

            def step_torch():
                fwd_bwd(dm)
                opt2.step(); opt2.zero_grad(set_to_none=False)
            med, ts = timed(step_torch, args.warmup, args.iters)
            emit(kind="ddp", variant=f"torch_ddp_{cap}mb", size=args.size, world=world,
                 iter_ms=med * 1e3, min_ms=ts[0] * 1e3, max_ms=ts[-1] * 1e3,
                 tokens_per_s=args.batch * args.ctx * world / med)
            del dm, opt2
    emit(kind="mem", size=args.size, peak_GiB=torch.cuda.max_memory_allocated() / 2**30)


def single_gpu_kernels():
    # copy bandwidth and GEMM ceiling
    a = torch.empty(2 * 1024**3 // 2, dtype=torch.bfloat16, device="cuda").normal_()
    b = torch.empty_like(a)
    med, _ = timed(lambda: b.copy_(a), 3, 20)
    emit(kind="ceiling", what="d2d_copy", GBs=2 * a.numel() * 2 / med / 1e9)
    del a, b
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    med, _ = timed(lambda: m @ m, 3, 20)
    emit(kind="ceiling", what="gemm_bf16_8192", TFLOPs=2 * 8192**3 / med / 1e12)
    # attention leaderboard config
    q, k, v = torch.randn(3, 16, 16384, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    def fb():
        o = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)
        o.sum().backward()
    def fo():
        with torch.no_grad():
            F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)
    medf, _ = timed(fo, 5, 30)
    med, _ = timed(fb, 5, 30)
    flops_f = 4 * 16 * 16384 * 16384 * 64 / 2
    emit(kind="attention", impl="torch_sdpa", cfg="B1 H16 S16384 D64 bf16 causal",
         fwd_ms=medf * 1e3, fwd_bwd_ms=med * 1e3, fwd_TFLOPs=flops_f / medf / 1e12,
         fwd_bwd_TFLOPs=3.5 * flops_f / med / 1e12)
    del q, k, v
    # RMSNorm forward, eager vs compiled, 50000 rows
    for H in (1024, 2048, 4096, 8192):
        x = torch.randn(50000, H, device="cuda")
        w = torch.randn(H, device="cuda")
        def rms(x, w):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
        med, _ = timed(lambda: rms(x, w), 5, 50)
        ln = torch.nn.LayerNorm(H).cuda()
        medln, _ = timed(lambda: ln(x), 5, 50)
        crms = torch.compile(rms)
        medc, _ = timed(lambda: crms(x, w), 5, 50)
        byts = 2 * x.numel() * 4
        emit(kind="rmsnorm_fwd", H=H, eager_ms=med * 1e3, layernorm_ms=medln * 1e3,
             compiled_ms=medc * 1e3, compiled_GBs=byts / medc / 1e9, eager_GBs=byts / med / 1e9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="xl")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--naive-attn", action="store_true")
    ap.add_argument("--kernels", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--skip-ddp", action="store_true")
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if world > 1:
        dist.init_process_group("nccl")
    if world > 1:
        allreduce_bench(world)
    if not args.skip_ddp:
        ddp_variants(args, world, rank)
    if args.kernels and rank == 0:
        single_gpu_kernels()
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
