#!/usr/bin/python3
"""PyTorch's side of tests/mpi/torch_join.sh: the cases of tests/mpi/test_join.cpp "[.torch]" in
PyTorch 1.13's DDP on gloo, with find_unused_parameters=True and, where ranks run out of batches,
torch.distributed.algorithms.Join with divide_by_initial_world_size=False (the divisor ringdp
uses: the ranks that had a batch). Same model (trunk + a branch skipped on some steps), data,
initial weights, schedule and SGD(lr 0.05, momentum 0.9), all float64. Run under mpiexec:
torch_join.py FOLDER CASE; rank 0 writes FOLDER/torch-CASE.json.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

F, B, MAX_STEPS, MAX_RANKS = 5, 2, 8, 4


class SkippableBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Linear(F, 1)
        self.branch = torch.nn.Linear(F, 1)
        self.use_branch = True

    def forward(self, x):
        y = self.trunk(x)
        return y + self.branch(x) if self.use_branch else y


def sometimes_skipped(rank, step):
    return step % 4 != 3 and (step + rank) % 3 != 0


CASES = {  # steps(rank), branch(rank, step), join, epochs: as test_join.cpp's
    "unused": (lambda r: 6, sometimes_skipped, False, 2),
    "join": (lambda r: 3 + r % 3, lambda r, k: True, True, 1),
    "join-unused": (lambda r: 3 + r % 3, sometimes_skipped, True, 1),
}


def main():
    folder, case = sys.argv[1:3]
    steps, branch, join, epochs = CASES[case]
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", 0)))
    world_size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", 1)))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    data = json.load(open(f"{folder}/data.json"))
    x_all = torch.tensor(data["x"], dtype=torch.float64).reshape(-1, F)
    y_all = torch.tensor(data["y"], dtype=torch.float64).reshape(-1, 1)
    model = SkippableBranch().double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.tensor(data[name], dtype=torch.float64).reshape(p.shape))
    ddp = DDP(model, find_unused_parameters=True)
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        with Join([ddp], enable=join, divide_by_initial_world_size=False):
            for step in range(steps(rank)):
                first = ((epoch * MAX_STEPS + step) * MAX_RANKS + rank) * B
                x, y = x_all[first:first + B], y_all[first:first + B]
                model.use_branch = branch(rank, step)
                sgd.zero_grad()
                torch.nn.functional.mse_loss(ddp(x), y).backward()
                sgd.step()
    if rank == 0:
        values = [v for p in model.parameters() for v in p.detach().reshape(-1).tolist()]
        with open(f"{folder}/torch-{case}.json", "w") as out:
            json.dump({"parameters": values}, out)
    # Under Join with a parameter no rank used (join-unused), PyTorch 1.13 leaves the last joiner
    # with a collective nobody matches: its process-group teardown then waits forever, after the
    # training (and Join's final parameter broadcast) is complete. Leave without the teardown.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
