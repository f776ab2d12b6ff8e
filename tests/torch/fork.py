"""One rank of a PyTorch job on the ringdp backend that forks after init_process_group, for
tests/torch/test_fork.sh (issue #48: a child forked with os.fork() that left by sys.exit crashed
joining its parent's threads):
  fork        every rank forks a child that tries an all_reduce (a RuntimeError naming the fork)
              and leaves by sys.exit(0); the parent waits for it, then all-reduces on
  dataloader  a DataLoader with 2 worker processes (forked), one pass with workers that exit after
              it and two with persistent_workers, the batches all-reduced by the parent; each
              sample tries an all_reduce inside its worker, which must raise naming the fork
    mpirun -n N python3 tests/torch/fork.py RENDEZVOUS_DIR MODE"""
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

import ringdp_torch  # noqa: F401  (its import registers the backend)

rendezvous, mode = sys.argv[1], sys.argv[2]
# mpirun's, mpiexec's, or (no MPI) a plain launcher's RANK and WORLD_SIZE.
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", os.environ.get("RANK", "0"))))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", os.environ.get("WORLD_SIZE", "1"))))
dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/store", rank=rank, world_size=size)


def summed(value):
    t = torch.full((100,), float(value))
    dist.all_reduce(t)
    return t[0].item()


expected = size * (size - 1) / 2
if summed(rank) != expected:
    sys.exit(f"rank {rank}: first all_reduce wrong")
if mode == "fork":
    child = os.fork()
    if child == 0:
        try:
            summed(rank)
            print(f"rank {rank} child: FAIL: all_reduce ran in a forked child", flush=True)
            sys.exit(1)
        except RuntimeError as e:
            print(f"rank {rank} child caught: {e}", flush=True)
        sys.exit(0)
    _, status = os.waitpid(child, 0)
    if status != 0:
        sys.exit(f"rank {rank}: the forked child ended with status {status}")
elif mode == "dataloader":

    class Refused(Dataset):
        """Sample i is i, once the worker has seen its collective refused naming the fork."""

        def __len__(self):
            return 64

        def __getitem__(self, i):
            try:
                dist.all_reduce(torch.zeros(1))
            except RuntimeError as e:
                if "forked from" in str(e):
                    return torch.tensor(float(i))
            raise AssertionError(f"a DataLoader worker ran or mis-reported an all_reduce (sample {i})")

    data = Refused()
    for persistent, passes in ((False, 1), (True, 2)):
        loader = DataLoader(data, batch_size=8, num_workers=2, persistent_workers=persistent,
                            multiprocessing_context="fork")
        for _ in range(passes):
            total = sum(summed(batch.sum().item()) for batch in loader)
            if total != size * 64 * 63 / 2:
                sys.exit(f"rank {rank}: the batches summed to {total}")
if summed(rank) != expected:
    sys.exit(f"rank {rank}: last all_reduce wrong")
print(f"rank {rank}: done", flush=True)
