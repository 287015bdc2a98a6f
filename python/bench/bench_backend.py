"""One backend's timings, printed as JSON lines by rank 0. Run under torchrun:

    torchrun --standalone --nproc_per_node N bench_backend.py BACKEND all_reduce SIZES...
    torchrun --standalone --nproc_per_node N bench_backend.py BACKEND ddp

all_reduce: float32 SUM, in place, for each size in bytes: 3 warm-up calls, then timed calls after a
barrier until at least 0.3 s and 20 calls have passed (the count is agreed: rank 0's is broadcast);
the time per call is the slowest rank's mean.
ddp: a DDP step (forward, backward with the bucketed all-reduces, SGD step) of a 2,100,225-parameter
MLP (Linear(1024,1024), ReLU, Linear(1024,1024), ReLU, Linear(1024,1)) on a batch of 32; 5 warm-up
steps, then the median over 30 steps of the slowest rank's step time.
"""

import json
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

backend, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
torch.set_num_threads(1)
dist.init_process_group(backend, timeout=timedelta(seconds=120))
rank, n = dist.get_rank(), dist.get_world_size()


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


if mode == "all_reduce":
    for size in (int(s) for s in args):
        x = torch.ones(size // 4)
        for _ in range(3):
            dist.all_reduce(x)
        # How many calls fill 0.3 s, from rank 0's estimate, so every rank makes the same number.
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        one = time.perf_counter() - t0
        count = torch.tensor([max(20, int(0.3 / max(one, 1e-6)))])
        dist.broadcast(count, src=0)
        calls = int(count)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(x)
        per_call = slowest((time.perf_counter() - t0) / calls)
        if rank == 0:
            print(json.dumps({"backend": backend, "ranks": n, "bytes": size, "calls": calls, "us": per_call * 1e6}), flush=True)
elif mode == "ddp":
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 1024), torch.randn(32, 1)
    times = []
    for step in range(35):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        elapsed = slowest(time.perf_counter() - t0)
        if step >= 5:
            times.append(elapsed)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(json.dumps({"backend": backend, "ranks": n, "params": params, "ms": statistics.median(times) * 1e3}), flush=True)
dist.barrier()
dist.destroy_process_group()
