"""DDP training as a user writes it: no chorus import, the backend named on the command line.

    torchrun --nproc_per_node N train_ddp.py BACKEND OUT.pt [--check-host ALGORITHM]

An MLP, DistributedSampler (shuffled), SGD with momentum; every rank seeds its initial weights
differently, so DDP's first broadcast matters. Saves rank 0's parameters to OUT.pt and fails unless
every rank ends with the same bits. --check-host (chorus only) installs a DDP communication hook that,
before each bucket's all_reduce, gathers every rank's bucket and sums them with chorus's host::Comm
(threads of this process, the named algorithm), then checks that the backend's all_reduce gave the
same bits.
"""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

backend, out_path = sys.argv[1], sys.argv[2]
check_host = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--check-host" else None
torch.set_num_threads(1)
dist.init_process_group(backend, timeout=timedelta(seconds=60))
rank, n = dist.get_rank(), dist.get_world_size()

torch.manual_seed(1234)
data = TensorDataset(torch.randn(256, 20), torch.randn(256, 1))
torch.manual_seed(rank)  # different initial weights per rank: DDP must broadcast rank 0's
model = DDP(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1)))
buckets_checked = 0
if check_host:
    import chorus_torch

    def host_checked_all_reduce(state, bucket):
        global buckets_checked
        mine = bucket.buffer().div_(n)
        every = [torch.empty_like(mine) for _ in range(n)]
        dist.all_gather(every, mine)
        chorus_torch.host_all_reduce(every, check_host)
        dist.all_reduce(mine)
        if not torch.equal(mine, every[rank]):
            raise AssertionError(f"rank {rank}: bucket all_reduce differs from host::Comm's ({check_host})")
        buckets_checked += 1
        fut = torch.futures.Future()
        fut.set_result(mine)
        return fut

    model.register_comm_hook(None, host_checked_all_reduce)

sampler = DistributedSampler(data, shuffle=True, seed=0)
loader = DataLoader(data, batch_size=16, sampler=sampler)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()

flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
every = [torch.empty_like(flat) for _ in range(n)]
dist.all_gather(every, flat)
if not all(torch.equal(e, flat) for e in every):
    raise AssertionError(f"rank {rank}: ranks ended with different parameters")
if rank == 0:
    torch.save(flat, out_path)
    print(f"{backend}: {n} ranks, {flat.numel()} parameters, ranks identical"
          + (f", {buckets_checked} buckets equal to host::Comm ({check_host})" if check_host else ""), flush=True)
dist.barrier()
dist.destroy_process_group()
