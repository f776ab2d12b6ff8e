#!/usr/bin/python3
"""The seed article's PyTorch example, corrected (docs/seed-fixed.md explains each change).

Linear(10 -> 1), MSE, SGD lr 0.01, 100 samples of 10 features per rank, 10 epochs: the job
`mpirun -np 4 ringdp-train` runs. One process per rank, on the CPU with gloo (or --backend ringdp):

    mpirun -np 4 python3 docs/examples/seed_fixed.py        (Open MPI; MPICH: mpiexec.mpich -n 4)
    python3 docs/examples/seed_fixed.py --spawn 4           (the article's own launch, mp.spawn)

Not Debian 12's torchrun: it stops before it starts a worker (docs/seed-fixed.md); PyPI torch's
torchrun works. Without an MPI launcher the ringdp backend meets its ranks through torch's store
and talks over UCX (docs/torch.md, "Launchers").

--data CSV (last column the target), --init JSON and --export JSON read and write the formats of
ringdp-train's flags of the same names, so both can start from the same weights and data and be
compared (tests/cli/train.sh, case seed-fixed).
"""
import argparse
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def launcher_environment():
    """Rank and world size from torchrun, Open MPI or MPICH; the rendezvous on this host unless set.

    (Mistake 8: init_process_group needs MASTER_ADDR and MASTER_PORT, which mp.spawn does not set.)
    """
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29500")
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def spawn_environment():
    """The rendezvous for processes mp.spawn starts on this host: MASTER_ADDR and a free
    MASTER_PORT, unless set (mistake 8: the seed set neither)."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])


def load_data(args, world_size):
    """One data set, the same on every rank (mistake 6: each rank drew its own), with a target y
    (mistake 5: the seed compared the output with its own input)."""
    if args.data:
        rows = []
        with open(args.data, encoding="utf-8") as f:
            for line in f:
                try:
                    rows.append([float(v) for v in line.strip().split(",")])
                except ValueError:
                    if rows:  # only the first line may be a header
                        sys.exit(f"seed_fixed.py: error: {args.data}: not a number in '{line.strip()}'")
        table = torch.tensor(rows, dtype=torch.float64)
        return table[:, :-1].float(), table[:, -1:].float()
    g = torch.Generator().manual_seed(args.seed)
    n = args.samples * world_size
    x = torch.randn(n, args.features, generator=g)
    w = torch.randn(args.features, 1, generator=g)
    y = x @ w + 0.5 + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def main():
    ap = argparse.ArgumentParser(description="The seed's job, corrected: DDP on the CPU with gloo or ringdp")
    ap.add_argument("--backend", choices=["gloo", "ringdp"], default="gloo",
                    help="torch.distributed backend; ringdp needs PYTHONPATH=build/python (and UCX without an "
                         "MPI launcher)")
    ap.add_argument("--data", help="numeric CSV, last column the target (default: synthetic)")
    ap.add_argument("--samples", type=int, default=100, help="synthetic samples per rank")
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-shuffle", action="store_true", help="keep the data order fixed")
    ap.add_argument("--init", help="initial parameters, JSON as ringdp-train --init reads it")
    ap.add_argument("--export", help="final parameters from rank 0, JSON as ringdp-train --export writes it")
    ap.add_argument("--spawn", type=int, metavar="N",
                    help="start N ranks with torch.multiprocessing.spawn, the seed article's launch, instead "
                         "of running as one rank of a launcher")
    args = ap.parse_args()
    if args.spawn is not None:
        if args.spawn < 1:
            ap.error(f"--spawn {args.spawn}: expected at least 1 rank")
        spawn_environment()
        import torch.multiprocessing as mp
        mp.spawn(train, args=(args.spawn, args), nprocs=args.spawn)
    else:
        train(*launcher_environment(), args)


def train(rank, world_size, args):
    """One rank's job: the seed's train(rank, world_size), corrected."""
    # One process per rank (mistake 1: DataParallel is one process driving several GPUs).
    # gloo runs on the CPU; on GPUs: nccl, and torch.cuda.set_device(local_rank) first (mistake 7).
    if args.backend == "ringdp":
        import ringdp_torch  # noqa: F401  (its import registers the backend)
    dist.init_process_group(args.backend, rank=rank, world_size=world_size)

    x, y = load_data(args, world_size)
    # Seeded, and alike on every rank: the initial weights, and so every logged loss, are the same
    # from run to run (unseeded, each run printed other losses). DDP would copy rank 0's anyway.
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(x.shape[1], 1)  # the seed's Net is this one layer
    if args.init:
        with open(args.init, encoding="utf-8") as f:
            state = json.load(f)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.tensor(state[name]["data"], dtype=torch.float64).reshape(state[name]["shape"]))
    # DDP broadcasts rank 0's parameters now (mistake 6) and all-reduces the gradients during
    # backward, averaged (mistake 4: the seed all-reduced a generator of parameters, summed).
    ddp = DDP(model)
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)

    data = TensorDataset(x, y)
    # Each rank takes every world_size-th sample (mistake 6: no rank had a share of one data set).
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=not args.no_shuffle,
                                 seed=args.seed)
    loader = DataLoader(data, batch_size=len(sampler), sampler=sampler)  # the whole shard per step

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, steps = 0.0, 0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(ddp(xb), yb)
            # No reduce of the loss and no barrier here (mistakes 2 and 3): backward starts from
            # this rank's own loss, and DDP's all-reduce is the only synchronization a step needs.
            loss.backward()
            optimizer.step()
            total += loss.item()
            steps += 1
        # For the log only, after the step: the mean of the ranks' losses, reduced to rank 0.
        mean = torch.tensor([total / steps], dtype=torch.float64)
        dist.reduce(mean, dst=0)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}  loss {mean.item() / world_size:.6f}", flush=True)

    if rank == 0 and args.export:
        state = {name: {"shape": list(p.shape), "data": p.detach().double().flatten().tolist()}
                 for name, p in model.named_parameters()}
        with open(args.export, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
    if rank == 0:
        print("Finished training")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
