"""One rank's part of a PyTorch job on the ringdp backend, for tests/torch/test_diagnostics.sh:
  train    DDP on a small MLP, 6 steps (the drills of RINGDP_FAULT, RINGDP_TRACE, RINGDP_TIMELINE)
  mismatch rank 1 calls broadcast where the others call all_reduce
    mpirun -n N python3 tests/torch/diagnostics.py RENDEZVOUS_DIR MODE"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ringdp_torch  # noqa: F401  (its import registers the backend)

rendezvous, mode = sys.argv[1], sys.argv[2]
# mpirun's, mpiexec's, or (no MPI) a plain launcher's RANK and WORLD_SIZE.
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", os.environ.get("RANK", "0"))))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", os.environ.get("WORLD_SIZE", "1"))))
dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/store", rank=rank, world_size=size)
if mode == "mismatch":
    t = torch.ones(1000)
    if rank == 1:
        dist.broadcast(t, src=0)
    else:
        dist.all_reduce(t)
elif mode == "train":
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        x, y = torch.randn(8, 16), torch.randn(8, 1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
