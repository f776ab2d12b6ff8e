"""What PyTorch 2.x programs call, on the ringdp backend against gloo in the same run (issue #50
item 6; FSDP2's checkpoint is tests/torch/fsdp_checkpoint.py's), or against a reference computed
here where gloo lacks the call (PREMUL_SUM) or where a value is known on every rank (DTensor's full tensor): functional collectives (each op, sum and
avg), all_gather_into_tensor and reduce_scatter_tensor coalesced, batch_isend_irecv, a 1-D and (on
4 ranks) a 2-D DeviceMesh with DTensor redistributions and a sharded matmul, FSDP2 (fully_shard)
training a small transformer block with AdamW for 20 steps, DDP with ZeroRedundancyOptimizer and under
Join (the comm hooks are tests/torch/test_ddp.py's, run on 2.x too). Inputs are small integers where a
result must be bit-for-bit; FSDP2's parameters are compared with gloo's within a tolerance.
    mpirun -n N python tests/torch/test_torch2.py RENDEZVOUS_DIR   (tests/torch/run.sh with the
    venv's Python: RINGDP_TORCH_PYTHON)"""
import os
import sys

import ringdp_torch
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.algorithms.join import Join
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.nn.parallel import DistributedDataParallel as DDP

from common import Checks, init
from transformer_block import Block

rank, size, gloo = init(sys.argv[1])
check = Checks(rank)
world = dist.group.WORLD


def data(r, count, dtype=torch.float32):
    return ((torch.arange(count) * (r + 3)) % 5 + 1).to(dtype)


def both(call):
    """call(group) on ringdp's group and on gloo's; returns (ringdp's, gloo's)."""
    return call(world), call(gloo)


# --- functional collectives (DTensor's and torch.compile's path) ----------------------------------
for count in sorted({1, size, 10 * size + 1}):
    x = data(rank, count)
    # avg: ringdp multiplies the sum by 1/N, where gloo's path divides it by N: one rounding apart.
    for op in ("sum", "avg", "max", "min"):
        mine, theirs = both(lambda g: funcol.wait_tensor(funcol.all_reduce(x, op, g)))
        (check.close(f"funcol.all_reduce avg of {count}", mine, theirs, 1) if op == "avg" else
         check.equal(f"funcol.all_reduce {op} of {count}", mine, theirs))
    mine, theirs = both(lambda g: funcol.wait_tensor(funcol.all_gather_tensor(x, 0, g)))
    check.equal(f"funcol.all_gather_tensor of {count}", mine, theirs)
    whole = data(rank, count * size)
    for op in ("sum", "avg"):
        mine, theirs = both(lambda g: funcol.wait_tensor(funcol.reduce_scatter_tensor(whole, op, 0, g)))
        check.close(f"funcol.reduce_scatter_tensor {op} of {count} per rank", mine, theirs, 1 if op == "avg" else 0)
    mine, theirs = both(lambda g: funcol.wait_tensor(funcol.all_to_all_single(whole, None, None, g)))
    check.equal(f"funcol.all_to_all_single of {count} per rank", mine, theirs)

# --- coalesced all-gather and reduce-scatter (FSDP2's and DTensor's) -------------------------------
shapes = [(3,), (2, 5), (1,), (4, 1)]


def coalesced_gather(group):
    outs = [torch.empty((size * s[0],) + s[1:]) for s in shapes]
    with dist._coalescing_manager(group=group, async_ops=True) as cm:
        for i, s in enumerate(shapes):
            dist.all_gather_into_tensor(outs[i], data(rank + i, torch.Size(s).numel()).reshape(s), group=group)
    cm.wait()
    return torch.cat([o.flatten() for o in outs])


def coalesced_scatter(group, op):
    outs = [torch.empty(s) for s in shapes]
    with dist._coalescing_manager(group=group, async_ops=True) as cm:
        for i, s in enumerate(shapes):
            whole = data(rank + i, size * torch.Size(s).numel()).reshape((size * s[0],) + s[1:])
            dist.reduce_scatter_tensor(outs[i], whole, op=op, group=group)
    cm.wait()
    return torch.cat([o.flatten() for o in outs])


mine, theirs = both(coalesced_gather)
check.equal("all_gather_into_tensor x4 under _coalescing_manager", mine, theirs)
gloo_sum = coalesced_scatter(gloo, dist.ReduceOp.SUM)
check.equal("reduce_scatter_tensor x4 under _coalescing_manager, PREMUL_SUM 0.5 (gloo's SUM x 0.5)",
            coalesced_scatter(world, dist._make_nccl_premul_sum(0.5)), gloo_sum * 0.5)
for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
    mine, theirs = both(lambda g: coalesced_scatter(g, op))
    check.close(f"reduce_scatter_tensor x4 under _coalescing_manager, {op}", mine, theirs,
                1 if op == dist.ReduceOp.AVG else 0)

def mixed_dtypes(group):
    with dist._coalescing_manager(group=group, async_ops=True) as cm:
        dist.all_gather_into_tensor(torch.empty(2 * size), torch.ones(2), group=group)
        dist.all_gather_into_tensor(torch.empty(2 * size, dtype=torch.float64), torch.ones(2, dtype=torch.float64),
                                    group=group)
    cm.wait()


# Refused on every rank before anything moves, so the group goes on.
check.raises("all_gather_into_tensor of two dtypes under _coalescing_manager", "tensors differ in dtype (Double and Float)",
             lambda: mixed_dtypes(world))

# --- PREMUL_SUM (gloo refuses it): each input times the factor, then the sum ----------------------
for factor in (0.5, torch.tensor([0.25])):
    t = data(rank, 7 * size)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
    want = sum(data(r, 7 * size) * float(factor) for r in range(size))
    check.equal(f"all_reduce PREMUL_SUM factor {float(factor)}", t, want)
    out = torch.empty(7)
    dist.reduce_scatter_tensor(out, data(rank, 7 * size), op=dist._make_nccl_premul_sum(factor))
    check.equal(f"reduce_scatter_tensor PREMUL_SUM factor {float(factor)}", out, want[7 * rank:7 * (rank + 1)])
    out = torch.empty(7)
    dist.reduce_scatter(out, list(data(rank, 7 * size).chunk(size)), op=dist._make_nccl_premul_sum(factor))
    check.equal(f"reduce_scatter (list) PREMUL_SUM factor {float(factor)}", out, want[7 * rank:7 * (rank + 1)])
# A column (not contiguous): multiplied in the copy the collective reads, written back.
matrix = data(rank, 4 * size).reshape(size, 4)
column = matrix[:, 1]
dist.all_reduce(column, op=dist._make_nccl_premul_sum(0.5))
check.equal("all_reduce PREMUL_SUM of a column", column,
            sum(data(r, 4 * size).reshape(size, 4)[:, 1] * 0.5 for r in range(size)))
check.raises("PREMUL_SUM on integers", "PREMUL_SUM needs a floating dtype",
             lambda: dist.all_reduce(torch.ones(3, dtype=torch.int64), op=dist._make_nccl_premul_sum(2.0)))
check.raises("reduce with PREMUL_SUM", "PREMUL_SUM is not supported by ringdp's reduce",
             lambda: dist.reduce(torch.ones(3), 0, op=dist._make_nccl_premul_sum(2.0)))


# --- batch_isend_irecv: a ring exchange ------------------------------------------------------------
def ring_exchange(group):
    send, recv = data(rank, 9), torch.empty(9)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % size, group),
           dist.P2POp(dist.irecv, recv, (rank - 1) % size, group)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return recv


if size > 1:
    mine, theirs = both(ring_exchange)
    check.equal("batch_isend_irecv ring", mine, theirs)
    check.equal("batch_isend_irecv ring: the left neighbour's data", mine, data((rank - 1) % size, 9))

# --- DeviceMesh and DTensor: redistributions against the full tensor every rank knows -------------
full = torch.arange(4 * size * 6, dtype=torch.float32).reshape(4 * size, 6) % 7
other = torch.arange(6 * 5, dtype=torch.float32).reshape(6, 5) % 3
mesh = init_device_mesh("cpu", (size,))
row = distribute_tensor(full, mesh, [Shard(0)])
check.equal("DTensor Shard(0): this rank's rows", row.to_local(), full.chunk(size)[rank])
check.equal("DTensor Shard(0) -> Replicate", row.redistribute(mesh, [Replicate()]).to_local(), full)
col = row.redistribute(mesh, [Shard(1)])
check.equal("DTensor Shard(0) -> Shard(1) -> full_tensor", col.full_tensor(), full)
check.equal("DTensor sharded matmul", (row @ distribute_tensor(other, mesh, [Replicate()])).full_tensor(),
            full @ other)
if size == 4:
    mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    for placements in ([Shard(0), Shard(1)], [Replicate(), Shard(0)], [Shard(1), Replicate()]):
        d = distribute_tensor(full, mesh2, placements)
        for target in ([Replicate(), Replicate()], [Shard(1), Shard(0)], [Shard(0), Replicate()]):
            check.equal(f"2-D DTensor {placements} -> {target}", d.redistribute(mesh2, target).full_tensor(), full)
    d = distribute_tensor(full, mesh2, [Shard(0), Replicate()])
    check.equal("2-D DTensor sharded matmul", (d @ distribute_tensor(other, mesh2, [Replicate(), Replicate()]))
                .full_tensor(), full @ other)


# --- FSDP2: a small transformer block, AdamW, 20 steps, on ringdp and on gloo ----------------------
def fsdp_model(device_mesh):
    torch.manual_seed(0)
    model = Block()
    fully_shard(model.mlp, mesh=device_mesh)
    fully_shard(model, mesh=device_mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


# In lockstep: each step both models start from the same parameters, and this rank's shard of every
# gradient (all-gathered parameters, reduce-scattered gradients) must agree with gloo's to a few
# float32 roundings of the largest gradient. The parameters are then made equal again: over 20 AdamW
# steps, a gradient that is zero up to rounding may take either sign, and AdamW turns that into a
# step of up to lr, so free-running models drift apart by ~1e-3 on 4 ranks (measured) although
# every step agrees.
mine, my_optimizer = fsdp_model(mesh)
theirs, their_optimizer = fsdp_model(DeviceMesh.from_group(gloo, "cpu"))
generator = torch.Generator().manual_seed(100 + rank)
worst = 0.0
for step in range(20):
    x = torch.randn(4, 6, 32, generator=generator)
    for model in (mine, theirs):
        model(x).pow(2).mean().backward()
    for (name, p), q in zip(mine.named_parameters(), theirs.parameters()):
        g, h = p.grad.to_local(), q.grad.to_local()
        bound = 8 * torch.finfo(torch.float32).eps * max(h.abs().max().item(), 1e-30)
        check.count += 1
        if (g - h).abs().max().item() > bound:
            print(f"FAIL rank {rank}: FSDP2 step {step}: {name}'s gradient shard differs from gloo's by "
                  f"{(g - h).abs().max().item():.3e} (bound {bound:.3e})", flush=True)
            sys.exit(1)
        worst = max(worst, (g - h).abs().max().item() / max(h.abs().max().item(), 1e-30))
    for optimizer in (my_optimizer, their_optimizer):
        optimizer.step()
        optimizer.zero_grad()
    with torch.no_grad():
        for p, q in zip(mine.parameters(), theirs.parameters()):
            q.to_local().copy_(p.to_local())
# The shards are equal by the copy above: what this checks is full_tensor's all-gather on each.
for p, q in zip(mine.parameters(), theirs.parameters()):
    check.equal("FSDP2 full_tensor of equal shards", p.full_tensor(), q.full_tensor())



# --- DDP with ZeroRedundancyOptimizer, and Join over uneven inputs, against gloo -------------------
def ddp_run(group, zero):
    torch.manual_seed(1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)),
                process_group=group)
    if zero:
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2,
                                            process_group=group)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(7 + rank)
    steps = 5 if zero else 3 + rank  # uneven: rank r has 3 + r batches, under Join
    with Join([model] + ([optimizer] if zero else []), enable=not zero):
        for _ in range(steps):
            x, y = torch.randn(4, 8, generator=generator), torch.randn(4, 1, generator=generator)
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


for zero in (True, False):
    what = "DDP with ZeroRedundancyOptimizer(AdamW), 5 steps" if zero else "DDP under Join, rank r with 3 + r batches"
    mine, theirs = both(lambda g: ddp_run(g, zero))
    check.close(what, mine, theirs, 64)

# --- devices: what ringdp serves, and a "device:backend" string that names it -----------------------
# CUDA tensors ride ringdp's NCCL transport where ringdp has NCCL and torch was built with CUDA (the
# venv's torch is a CUDA build); they cannot run without a GPU: tests/gpu/device_check.sh runs them.
cuda = (torch.version.cuda is not None and os.environ.get("TEST_HAVE_NCCL") == "1"
        and tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 3))  # c10::Stream::native_handle
if ringdp_torch.cuda_tensors != cuda:
    check.fail(f"ringdp_torch.cuda_tensors is {ringdp_torch.cuda_tensors}, expected {cuda} (torch CUDA "
               f"{torch.version.cuda}, TEST_HAVE_NCCL={os.environ.get('TEST_HAVE_NCCL')})")
served = list(dist.Backend.backend_capability["ringdp"])
if served != (["cpu", "cuda"] if cuda else ["cpu"]):
    check.fail(f"ringdp registered for {served}")
# As PyTorch documents it: CPU tensors to ringdp, CUDA tensors to another backend (gloo here: NCCL
# needs a GPU to start).
mixed = dist.new_group(backend="cpu:ringdp,cuda:gloo")
if mixed._get_backend(torch.device("cpu")).name() != "ringdp":
    check.fail(f"'cpu:ringdp,cuda:gloo' gave CPU tensors to {mixed._get_backend(torch.device('cpu')).name()}")


def mixed_or_gloo(group):
    t = data(rank, 7)
    dist.all_reduce(t, group=mixed if group is world else group)
    return t


mine, theirs = both(mixed_or_gloo)
check.equal("all_reduce on a group made with 'cpu:ringdp,cuda:gloo'", mine, theirs)

dist.barrier()
print(f"rank {rank}: {check.count} checks of PyTorch {torch.__version__}'s 2.x calls against gloo and references "
      f"passed (FSDP2 gradients: largest difference {worst:.1e} of the largest gradient)", flush=True)
dist.destroy_process_group()
