"""The seed article's launch, torch.multiprocessing.spawn, on the ringdp backend: no MPI launcher,
so the ranks meet through the store torch makes from MASTER_ADDR and MASTER_PORT, and UCX carries
their messages (docs/torch.md, "Launchers"). Each rank all-reduces its rank on ringdp and on gloo;
rank 0 prints both sums.
    python3 docs/examples/spawn_allreduce.py [--ranks N]"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import ringdp_torch  # noqa: F401  (its import registers the backend)


def train(rank, world_size):
    dist.init_process_group("ringdp", rank=rank, world_size=world_size)
    gloo = dist.new_group(backend="gloo")
    mine = torch.tensor([float(rank)])
    on_gloo = mine.clone()
    dist.all_reduce(mine)
    dist.all_reduce(on_gloo, group=gloo)
    if rank == 0:
        print(f"sum of the ranks of {world_size} spawned processes: ringdp {mine.item()}, gloo {on_gloo.item()}")
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=4, help="processes to spawn (default 4)")
    world_size = parser.parse_args().ranks
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    mp.spawn(train, args=(world_size,), nprocs=world_size)
