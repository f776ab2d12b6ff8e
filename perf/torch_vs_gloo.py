"""torch.distributed on the ringdp backend against gloo, side by side in one job (issue #34 item 9):
  allreduce  dist.all_reduce (float32, SUM) from 8 B to MAX bytes: each size timed on both backends
             in every round, in alternating order; time = the slowest rank's mean over ITERS calls;
             median over ROUNDS rounds; busbw = 2(N-1)/N x bytes / time.
  ddp        PyTorch DDP's training step on an MLP of about 25 M parameters, both backends and a
             step with no DDP at all (the compute alone), interleaved; the step's median, and what is
             left of communication after backward (DDP's step minus the compute-alone step).
    mpirun -n N python3 perf/torch_vs_gloo.py RENDEZVOUS_DIR allreduce|ddp|fsdp [ROUNDS [MAX_BYTES]]
  or under torchrun (RANK and WORLD_SIZE set: no MPI, ringdp over UCX and its own shared memory)
  fsdp       (PyTorch 2.x) FSDP2's step (forward + backward) on an MLP of about 4 M parameters, each
             Linear under fully_shard, on both backends and the compute alone, interleaved; and
             the step's collectives alone on each backend (per layer: the forward's and the
             backward's all-gather, one reduce-scatter), the time FSDP spends in them when none
             overlaps.
(perf/torch-vs-gloo.sh runs them on 2 and 4 ranks.)"""
import copy
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ringdp_torch  # noqa: F401

rendezvous, mode = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
max_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 64 << 20
rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))))
size = int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))))
dist.init_process_group("ringdp", init_method=f"file://{rendezvous}/store", rank=rank, world_size=size)
groups = {"ringdp": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
torch.set_num_threads(max(1, (os.cpu_count() or 1) // size))


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
    return t.item()


def time_allreduce(group, tensor, iters):
    for _ in range(max(2, iters // 10)):
        dist.all_reduce(tensor, group=group)
    dist.barrier(group=groups["gloo"])
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor, group=group)
    return slowest((time.perf_counter() - start) / iters)


def allreduce():
    # 8 B, then x8 to 1 MiB, then x4 up to MAX: 8 B ... 1 MiB, 4, 16, 64 MiB.
    sizes, b = [], 8
    while b <= max_bytes:
        sizes.append(b)
        b = b * 8 if b < 1 << 18 else (1 << 20 if b < 1 << 20 else b * 4)
    times = {(name, b): [] for name in groups for b in sizes}
    for r in range(rounds):
        for b in sizes:
            tensor = torch.ones(b // 4)
            iters = max(5, min(2000, (200 << 20) // (b * max(size, 2) * 4)))
            for name in (("ringdp", "gloo") if r % 2 == 0 else ("gloo", "ringdp")):
                times[(name, b)].append(time_allreduce(groups[name], tensor, iters))
    if rank == 0:
        print(f"# all_reduce float32 SUM, {size} ranks, median of {rounds} interleaved rounds")
        print(f"{'bytes':>10} {'gloo us':>10} {'ringdp us':>10} {'time ratio':>10} {'gloo busbw':>11} {'ringdp busbw':>12} {'busbw ratio':>11}")
        for b in sizes:
            g, m = (statistics.median(times[(n, b)]) for n in ("gloo", "ringdp"))
            bw = lambda t: 2 * (size - 1) / size * b / t / 1e9 if size > 1 else 0.0
            print(f"{b:>10} {g * 1e6:>10.1f} {m * 1e6:>10.1f} {m / g:>10.2f} {bw(g):>11.3f} {bw(m):>12.3f} {(bw(m) / bw(g) if bw(g) else 0):>11.2f}")


def ddp():
    torch.manual_seed(0)
    width = 2048
    layers = [torch.nn.Linear(1024, width), torch.nn.ReLU()]
    for _ in range(5):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers += [torch.nn.Linear(width, 10)]
    base = torch.nn.Sequential(*layers)
    params = sum(p.numel() for p in base.parameters())
    models = {"compute alone": base}
    for name, group in groups.items():
        models[name] = DDP(copy.deepcopy(base), process_group=group)  # its own parameters and hooks
    x, y = torch.randn(16, 1024), torch.randint(0, 10, (16,))
    times = {name: [] for name in models}
    for r in range(rounds):
        for name, model in (list(models.items()) if r % 2 == 0 else list(reversed(models.items()))):
            dist.barrier(group=groups["gloo"])
            start = time.perf_counter()
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            times[name].append(slowest(time.perf_counter() - start))
    if rank == 0:
        med = {name: statistics.median(v[1:] if len(v) > 2 else v) for name, v in times.items()}
        print(f"# DDP step (forward + backward, batch 16) on an MLP of {params / 1e6:.1f} M parameters, {size} ranks,"
              f" median of {rounds} interleaved rounds (the first dropped)")
        print(f"{'':>14} {'step ms':>9} {'comm not hidden ms':>19} {'vs gloo':>8}")
        for name in ("compute alone", "gloo", "ringdp"):
            print(f"{name:>14} {med[name] * 1e3:>9.1f} {(med[name] - med['compute alone']) * 1e3:>19.1f}"
                  f" {med[name] / med['gloo']:>8.2f}")


def fsdp():
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    width, depth = 1024, 4

    def mlp():
        torch.manual_seed(0)
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    models = {"compute alone": mlp()}
    for name, group in groups.items():
        model = mlp()
        mesh = DeviceMesh.from_group(group, "cpu")
        for layer in model[::2]:
            fully_shard(layer, mesh=mesh)
        models[name] = fully_shard(model, mesh=mesh)
    params = sum(p.numel() for p in models["compute alone"].parameters())
    x = torch.randn(16, width)
    # The step's collectives alone: each layer's parameters packed as FSDP2 packs them.
    shard = -(-(width * width + width) // size)
    parts = {"all_gather": (torch.ones(shard), torch.empty(shard * size)),
             "reduce_scatter": (torch.ones(shard * size), torch.empty(shard))}
    times = {name: [] for name in list(models) + ["gloo collectives", "ringdp collectives"]}
    for r in range(rounds):
        order = list(models.items()) if r % 2 == 0 else list(reversed(models.items()))
        for name, model in order:
            dist.barrier(group=groups["gloo"])
            start = time.perf_counter()
            model.zero_grad()
            model(x).pow(2).mean().backward()
            times[name].append(slowest(time.perf_counter() - start))
        for name in (("ringdp", "gloo") if r % 2 == 0 else ("gloo", "ringdp")):
            dist.barrier(group=groups["gloo"])
            start = time.perf_counter()
            for _ in range(depth):
                for _ in range(2):
                    dist.all_gather_into_tensor(parts["all_gather"][1], parts["all_gather"][0], group=groups[name])
                dist.reduce_scatter_tensor(parts["reduce_scatter"][1], parts["reduce_scatter"][0], group=groups[name])
            times[f"{name} collectives"].append(slowest(time.perf_counter() - start))
    if rank == 0:
        med = {name: statistics.median(v[1:] if len(v) > 2 else v) for name, v in times.items()}
        print(f"# FSDP2 step (forward + backward, batch 16) on an MLP of {params / 1e6:.1f} M parameters, {depth} "
              f"Linear layers each under fully_shard, {size} ranks, median of {rounds} interleaved rounds (the first "
              f"dropped); 'collectives' = the step's {2 * depth} all-gathers and {depth} reduce-scatters alone")
        print(f"{'':>14} {'step ms':>9} {'step - compute ms':>18} {'collectives ms':>15} {'vs gloo':>8}")
        print(f"{'compute alone':>14} {med['compute alone'] * 1e3:>9.1f}")
        for name in ("gloo", "ringdp"):
            print(f"{name:>14} {med[name] * 1e3:>9.1f} {(med[name] - med['compute alone']) * 1e3:>18.1f}"
                  f" {med[name + ' collectives'] * 1e3:>15.1f} {med[name] / med['gloo']:>8.2f}")


{"allreduce": allreduce, "ddp": ddp, "fsdp": fsdp}[mode]()
dist.destroy_process_group()
