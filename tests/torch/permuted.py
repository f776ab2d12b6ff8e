"""One rank of a PyTorch job whose torch ranks are not MPI's, for tests/torch/test_permuted.sh
(issue #47): as gloo, the ringdp backend takes any permutation.
  reverse  torch rank = N - 1 - MPI rank: collectives, a new_group and DDP against gloo's
           results with the same numbering
  same     every process passes rank 0: refused on every rank, naming the ranks given twice
    mpirun -n N python3 tests/torch/permuted.py RENDEZVOUS_DIR MODE"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ringdp_torch  # noqa: F401  (its import registers the backend)

rendezvous, mode = sys.argv[1], sys.argv[2]
mpi_rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1")))
rank = size - 1 - mpi_rank if mode == "reverse" else 0
try:
    dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/store", rank=rank, world_size=size)
except RuntimeError as e:
    print(f"MPI rank {mpi_rank} refused: {e}", flush=True)
    sys.exit(3)
assert dist.get_rank() == rank
gloo = dist.new_group(backend="gloo")


def same(what, make, run):
    """run(tensor, group) on ringdp's default group and on gloo's; the results must be equal."""
    mine, theirs = make(), make()
    run(mine, None)
    run(theirs, gloo)
    if not torch.equal(mine, theirs):
        sys.exit(f"FAIL rank {rank}: {what}: ringdp {mine[:6].tolist()} vs gloo {theirs[:6].tolist()}")


def ranked():
    return torch.arange(7, dtype=torch.float32) + 100 * rank


same("all_reduce", ranked, lambda t, g: dist.all_reduce(t, group=g))
same("broadcast from 0", ranked, lambda t, g: dist.broadcast(t, src=0, group=g))
same("broadcast from 1", ranked, lambda t, g: dist.broadcast(t, src=1, group=g))


def gathered(group):
    out = [torch.zeros(7) for _ in range(size)]
    dist.all_gather(out, ranked(), group=group)
    return torch.cat(out)


if not torch.equal(gathered(None), gathered(gloo)):
    sys.exit(f"FAIL rank {rank}: all_gather differs from gloo's")
if rank in (0, 1):
    pair, pair_gloo = dist.new_group([0, 1]), dist.new_group([0, 1], backend="gloo")
else:
    dist.new_group([0, 1]), dist.new_group([0, 1], backend="gloo")
if rank in (0, 1):
    same("all_reduce on new_group([0, 1])", ranked, lambda t, g: dist.all_reduce(t, group=pair if g is None else pair_gloo))
    peer = 1 - rank
    t = ranked()
    if rank == 0:
        dist.send(t, dst=peer)
    else:
        dist.recv(t, src=peer)
        if t[0].item() != 0:
            sys.exit(f"FAIL rank 1 received {t[0].item()} from torch rank 0, expected 0")

# DDP: the same steps on both backends give the same parameters.
params = []
for group in (None, gloo):
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 2), process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for step in range(3):
        opt.zero_grad()
        model(torch.randn(4, 8, generator=generator)).square().mean().backward()
        opt.step()
    params.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
if not torch.allclose(params[0], params[1], rtol=1e-6, atol=1e-7):
    sys.exit(f"FAIL rank {rank}: DDP's parameters differ from gloo's")
print(f"rank {rank} (MPI rank {mpi_rank}): done", flush=True)
