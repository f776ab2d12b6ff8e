#!/usr/bin/python3
"""PyTorch DDP's step on the model perf/ddp_step.cpp trains (by default the MLP
1024→4096→4096→1024, batch 64 per rank; float32, CPU, gloo, 25 MB buckets), printed in
ringdp-ddp-bench's format so the two can be compared in one run (perf/ddp-vs-torch.sh). Needs
Debian's python3-torch. Not a test.

    mpirun -np 2 python3 perf/ddp_torch.py [steps [widths [batch [compute]]]]

widths: layer sizes, comma-separated, ReLU between the Linear layers, as ringdp-ddp-bench builds
them; the seed's job is widths 10,1 and batch 100 on 4 ranks. `compute`: the same step without DDP
and without a process group, in one process: the math alone.
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    widths = [int(w) for w in (sys.argv[2] if len(sys.argv) > 2 else "1024,4096,4096,1024").split(",")]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    compute_only = len(sys.argv) > 4 and sys.argv[4] == "compute"
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ:
            rank, size = int(os.environ[rank_var]), int(os.environ[size_var])
            break
    else:
        rank, size = 0, 1
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    if compute_only and size != 1:
        sys.exit(f"perf/ddp_torch.py: compute: runs in 1 process, not {size} (it measures the math alone)")
    if not compute_only:
        dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.manual_seed(1)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    ddp = model if compute_only else DDP(model, bucket_cap_mb=25)
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.001)
    g = torch.Generator().manual_seed(10 + rank)
    x, y = torch.randn(batch, widths[0], generator=g), torch.randn(batch, widths[-1], generator=g)
    times = []
    for step in range(steps + 1):  # step 0 warms up
        start = time.perf_counter()
        sgd.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        sgd.step()
        if step:
            times.append(time.perf_counter() - start)
    if rank == 0:
        print(f"pytorch {torch.__version__} ranks {size}  threads {torch.get_num_threads()}  "
              f"{'compute only  ' if compute_only else ''}median step {1e3 * statistics.median(times):.3f} ms")
    if not compute_only:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
