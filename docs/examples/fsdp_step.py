"""FSDP2 on the ringdp backend, for docs/fsdp.md: a three-layer MLP, each Linear and the whole model
under fully_shard, trained with AdamW for a few steps on every rank of an MPI job. Rank 0 prints
which rows of each parameter every rank keeps and what a rank holds under FSDP2 against DDP.

    mpirun -np 4 python fsdp_step.py [--steps N] [--marks PREFIX]

--marks PREFIX writes PREFIX.rankR.json: when each step's forward, backward and optimizer step ran
(on the clock RINGDP_TIMELINE uses) and the shard length of each layer's all-gather, which
scripts/plot-fsdp reads beside the timeline to name each collective's layer."""
import argparse
import json
import math
import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import ringdp_torch  # noqa: F401  (registers the backend)

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
parser.add_argument("--marks", help="write PREFIX.rankR.json with the steps' phases and the layers' shard lengths")
args = parser.parse_args()

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
rendezvous = os.environ.get("FSDP_STEP_RENDEZVOUS", os.getcwd())
dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/fsdp_step.store", rank=rank, world_size=size)
mesh = init_device_mesh("cpu", (size,))

torch.manual_seed(0)  # the same model on every rank before sharding
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
layers = {"layer 0": model[0], "layer 1": model[2], "layer 2": model[4]}
for layer in layers.values():
    fully_shard(layer, mesh=mesh)  # one all-gather and one reduce-scatter per layer
fully_shard(model, mesh=mesh)  # the root: what no layer holds (nothing here)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

# Which rows of each parameter every rank keeps: FSDP2 cuts dimension 0 into `size` chunks of
# ceil(rows / size) rows (torch.chunk), the last ones shorter or empty.
local_rows = {f"{name}.{pname}": p.to_local().shape[0]
              for name, layer in layers.items() for pname, p in layer.named_parameters()}
every_rank = [None] * size
dist.all_gather_object(every_rank, local_rows)
if rank == 0:
    print(f"{'parameter':<16} {'full shape':<11} " + " ".join(f"{'rank ' + str(r):<9}" for r in range(size)))
    for name, layer in layers.items():
        for pname, p in layer.named_parameters():
            key, start = f"{name}.{pname}", 0
            spans = []
            for r in range(size):
                rows = every_rank[r][key]
                spans.append(f"{start}-{start + rows - 1}" if rows else "none")
                start += rows
            print(f"{key:<16} {str(list(p.shape)):<11} " + " ".join(f"{s:<9}" for s in spans))

# What a rank holds between steps: parameters, gradients and AdamW's two moments, float32.
shard_bytes = sum(p.to_local().numel() for p in model.parameters()) * 4
full_bytes = sum(p.numel() for p in model.parameters()) * 4
largest = max(sum(p.numel() for p in layer.parameters()) for layer in layers.values()) * 4
if rank == 0:
    print(f"rank 0 keeps {shard_bytes / 1024:.1f} KiB of parameters (FSDP2's shards), DDP {full_bytes / 1024:.1f} KiB "
          f"(the whole model); with gradients and AdamW's two moments: {4 * shard_bytes / 1024:.1f} KiB "
          f"against {4 * full_bytes / 1024:.1f} KiB. While a layer computes, FSDP2 also holds its full "
          f"parameters: {largest / 1024:.1f} KiB for the largest")

# Each layer's all-gather carries ceil(rows / size) rows of every parameter from each rank (the
# last chunks padded): the count the timeline records per rank.
shard_counts = {name: sum(math.ceil(p.shape[0] / size) * (p.numel() // p.shape[0]) for p in layer.parameters())
                for name, layer in layers.items()}
phases = []


def timed(step, phase, call):
    began = time.monotonic_ns() // 1000  # steady_clock microseconds, as RINGDP_TIMELINE's
    result = call()
    phases.append({"step": step, "phase": phase, "ts": began, "dur": time.monotonic_ns() // 1000 - began})
    return result


generator = torch.Generator().manual_seed(rank)  # each rank its own batch
for step in range(args.steps):
    x = torch.randn(32, 64, generator=generator)
    loss = timed(step, "forward", lambda: model(x).pow(2).mean())
    timed(step, "backward", loss.backward)
    timed(step, "optimizer.step", optimizer.step)
    optimizer.zero_grad()
dist.barrier()
if rank == 0:
    print(f"{args.steps} steps on {size} ranks, loss {loss.item():.4f} on rank 0")
if args.marks:
    path = f"{args.marks}.rank{rank}.json"
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(path)), delete=False) as f:
        json.dump({"rank": rank, "size": size, "shard_counts": shard_counts, "phases": phases}, f)
    os.replace(f.name, path)  # whole or not at all
dist.destroy_process_group()
