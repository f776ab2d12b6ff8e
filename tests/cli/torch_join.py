#!/usr/bin/python3
"""PyTorch's side of tests/cli/train.sh, case torch-join: ringdp-train --uneven join as PyTorch 1.13
does it. DDP on gloo over an MLP (Linear(F, H), ReLU, Linear(H, 1)), MSE, SGD; each rank takes rows
rank, rank + N, ... of the CSV (no padding, no shuffling), in batches of --batch-size, inside
torch.distributed.algorithms.Join with divide_by_initial_world_size=False (ringdp's divisor: the
ranks that had a batch). Reads --init, writes --export in ringdp-train's JSON format. PyTorch's
joined ranks do not step their optimizer, so the comparison holds for a stateless SGD (any number of
epochs) or one epoch with momentum. Run under mpiexec.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--data", "--init", "--export"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--momentum", type=float, default=0.0)
    args = ap.parse_args()

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", 0)))
    world_size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", 1)))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    with open(args.data) as f:
        table = torch.tensor([[float(v) for v in line.split(",")] for line in f.readlines()[1:]],
                             dtype=torch.float64)
    x, y = table[:, :-1].float(), table[:, -1:].float()
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 1))
    with open(args.init) as f:
        state = json.load(f)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.tensor(state[name]["data"], dtype=torch.float64).reshape(state[name]["shape"]))
    ddp = DDP(model)
    sgd = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    mine = list(range(rank, x.shape[0], world_size))
    for _ in range(args.epochs):
        with Join([ddp], divide_by_initial_world_size=False):
            for begin in range(0, len(mine), args.batch_size):
                rows = mine[begin:begin + args.batch_size]
                sgd.zero_grad()
                torch.nn.functional.mse_loss(ddp(x[rows]), y[rows]).backward()
                sgd.step()
    if rank == 0:
        out = {name: {"shape": list(p.shape), "data": p.detach().double().flatten().tolist()}
               for name, p in model.named_parameters()}
        with open(args.export, "w") as f:
            json.dump(out, f, indent=1)
    # PyTorch 1.13's process-group teardown after a Join sometimes waits forever here (seen on
    # 4 ranks; tests/mpi/torch_join.py meets it every time with a parameter no rank used): the
    # training and Join's final broadcast are complete, so leave without it.
    os._exit(0)


if __name__ == "__main__":
    main()
