"""FSDP2 (fully_shard) training on CPU, the backend named on the command line; saves the full
parameters (gathered with DTensor.full_tensor) from rank 0.

    torchrun --nproc_per_node N train_fsdp2.py BACKEND OUT.pt
"""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

backend, out_path = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
dist.init_process_group(backend, timeout=timedelta(seconds=60))
rank, n = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 48), nn.ReLU(), nn.Linear(48, 24), nn.ReLU(), nn.Linear(24, 1))
for layer in model:
    if isinstance(layer, nn.Linear):
        fully_shard(layer)
fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
torch.manual_seed(100 + rank)  # each rank its own batches
for step in range(5):
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()

flat = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()])
if rank == 0:
    torch.save(flat.detach(), out_path)
    print(f"{backend}: fsdp2 on {n} ranks, {flat.numel()} parameters", flush=True)
dist.barrier()
dist.destroy_process_group()
