"""One worker of a torchrun job that trains with DDP on the ringdp backend, checkpoints after every
epoch, and may lose a worker (issue #51 item 4): with KILL_AT, rank 1 of the first attempt kills
itself (SIGKILL) as that epoch begins; torchrun (--max-restarts 1) ends the others and starts every
worker again, which meets through the new attempt's store, loads the checkpoint and goes on. Rank 0
saves the final parameters, which must equal an uninterrupted run's (tests/torch/test_restart.sh).
    torchrun [--max-restarts 1] --nproc_per_node N restart.py DIR EPOCHS [KILL_AT]"""
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ringdp_torch  # noqa: F401  (its import registers the backend)

folder, epochs = sys.argv[1], int(sys.argv[2])
kill_at = int(sys.argv[3]) if len(sys.argv) > 3 else -1
dist.init_process_group("ringdp")  # env://: torchrun's store, scoped by the attempt
rank = dist.get_rank()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
checkpoint = os.path.join(folder, "checkpoint.pt")
start = 0
if os.path.exists(checkpoint):
    state = torch.load(checkpoint)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["epoch"]
ddp = DDP(model)
batches = torch.Generator().manual_seed(1234 + rank)
data = [(torch.randn(8, 16, generator=batches), torch.randn(8, 1, generator=batches)) for _ in range(4 * epochs)]
for epoch in range(start, epochs):
    if epoch == kill_at and attempt == 0 and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    for x, y in data[4 * epoch:4 * epoch + 4]:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    if rank == 0:  # written whole or not at all: a worker killed meanwhile leaves the last one
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1},
                   checkpoint + ".tmp")
        os.replace(checkpoint + ".tmp", checkpoint)
    dist.barrier()
if rank == 0:
    torch.save(model.state_dict(), os.path.join(folder, "final.pt"))
    print(f"attempt {attempt} began at epoch {start} and finished epoch {epochs}", flush=True)
dist.destroy_process_group()
