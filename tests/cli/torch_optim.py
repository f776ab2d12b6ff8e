#!/usr/bin/python3
"""PyTorch's side of tests/cli/train.sh, case torch-adam: DDP on gloo with torch.optim.Adam or AdamW,
or with ZeroRedundancyOptimizer over them, on the job ringdp-train runs with the same flags:
an MLP (Linear(F, H), ReLU, Linear(H, 1)), MSE, the CSV's rows split by DistributedSampler without
shuffling, --batch-size rows per rank per step. Reads --init and writes --export in ringdp-train's
JSON format, so the two can start from the same weights and be compared. Run under mpiexec.
--lr, --betas, --eps and --weight-decay left out are left to the optimizer class's own defaults.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--optimizer", choices=["adam", "adamw"], required=True)
    ap.add_argument("--betas")
    ap.add_argument("--eps", type=float)
    ap.add_argument("--weight-decay", type=float)
    ap.add_argument("--zero", action="store_true")
    args = ap.parse_args()

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", 0)))
    world_size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", 1)))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    table = torch.tensor([[float(v) for v in line.split(",")] for line in open(args.data).readlines()[1:]],
                         dtype=torch.float64)
    x, y = table[:, :-1].float(), table[:, -1:].float()
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 1))
    state = json.load(open(args.init))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.tensor(state[name]["data"], dtype=torch.float64).reshape(state[name]["shape"]))
    ddp = DDP(model)
    cls = torch.optim.Adam if args.optimizer == "adam" else torch.optim.AdamW
    options = dict(lr=args.lr, eps=args.eps, weight_decay=args.weight_decay)
    if args.betas is not None:
        options["betas"] = tuple(float(v) for v in args.betas.split(","))
    options = {k: v for k, v in options.items() if v is not None}
    if args.zero:
        optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=cls, **options)
    else:
        optimizer = cls(ddp.parameters(), **options)
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=False)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    criterion = torch.nn.MSELoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            criterion(ddp(xb), yb).backward()
            optimizer.step()
    if rank == 0:
        out = {name: {"shape": list(p.shape), "data": p.detach().double().flatten().tolist()}
               for name, p in model.named_parameters()}
        json.dump(out, open(args.export, "w"), indent=1)
        print("Finished training")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
