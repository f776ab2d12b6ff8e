"""One rank of a PyTorch DDP job on the ringdp backend that finishes and must exit 0, for
tests/torch/test_exit_clean.sh (issue #47): an MLP trained with momentum under DDP's fp16
compression hook, rank 0 saving its parameters, and no destroy_process_group, so that the backend's
completion threads are still there when Python exits. Before the exit hook, 3 runs of 80 aborted
there ("terminate called without an active exception").
    mpirun -n N python3 tests/torch/exit_clean.py RENDEZVOUS_DIR"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import ringdp_torch  # noqa: F401  (its import registers the backend)

rendezvous = sys.argv[1]
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/store", rank=rank, world_size=size)
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
model.register_comm_hook(None, default_hooks.fp16_compress_hook)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
generator = torch.Generator().manual_seed(rank)
for step in range(20):
    x, y = torch.randn(16, 32, generator=generator), torch.randn(16, 1, generator=generator)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
if rank == 0:
    torch.save([p.detach() for p in model.parameters()], os.path.join(rendezvous, "params.pt"))
print(f"rank {rank}: done", flush=True)
