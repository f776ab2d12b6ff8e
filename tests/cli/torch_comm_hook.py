#!/usr/bin/python3
"""PyTorch's side of tests/cli/train.sh, case comm-hook-torch: DDP on gloo with SGD and a
communication hook, on the job ringdp-train --comm-hook runs with the same flags: an MLP
(Linear(F, H), ReLU, Linear(H, 1)), MSE, the CSV's rows split by DistributedSampler without
shuffling, --batch-size rows per rank per step. Reads --init and writes --export in ringdp-train's
JSON format. Run under mpiexec.

--comm-hook fp16 registers PyTorch's own default_hooks.fp16_compress_hook. --comm-hook bf16 cannot:
gloo in PyTorch 1.13 has no bfloat16 all-reduce ("Invalid scalar type"; bf16_compress_hook is for
NCCL). bf16_hook below takes bf16_compress_hook's steps (cast to bfloat16, divide by the world size
in bfloat16, sum, cast back) and does the sum by all-gathering the bfloat16 values' bits and adding
them in rank order in bfloat16, which is what a bfloat16 all-reduce computes (up to its order).
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def bf16_hook(process_group, bucket):
    world_size = dist.get_world_size()
    compressed = bucket.buffer().to(torch.bfloat16).div_(world_size)
    # gloo moves no 16-bit integers either: the bits travel widened to int32.
    mine = compressed.view(torch.int16).to(torch.int32)
    bits = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(bits, mine)
    parts = [b.to(torch.int16).view(torch.bfloat16) for b in bits]
    total = parts[0].clone()
    for part in parts[1:]:
        total += part
    bucket.buffer().copy_(total)
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--comm-hook", choices=["none", "fp16", "bf16"], required=True)
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
    if args.comm_hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.comm_hook == "bf16":
        ddp.register_comm_hook(None, bf16_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
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
    # Now, not at main's return: freeing the DDP whose reducer holds a Python comm hook hangs now and
    # then in PyTorch 1.13 (about one run in three here; no Python frame is left to blame).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
