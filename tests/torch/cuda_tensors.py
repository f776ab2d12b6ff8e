"""CUDA tensors through the ringdp backend (issue #50 item 3), on a GPU: each collective against a
reference computed here on the CPU (gloo's CUDA support varies by build, so it is not the
reference), counts 0, 1 and not divisible by the ranks; a side stream made current, where the
collective must wait for a late fill of its input and the stream for the collective
(CollectiveOptions::stream); an asynchronous call waited for on another stream; DDP on the GPU
against DDP on gloo with the same model on the CPU; send and recv, also on a side stream; a call
whose tensors are on two devices, refused. Run by tests/gpu/device_check.sh at 1 rank,
and at 2 on one GPU where NCCL allows it.
    tests/torch/run.sh mpirun BUILD_DIR NP tests/torch/cuda_tensors.py"""
import sys

import ringdp_torch
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import Checks, init

if not ringdp_torch.cuda_tensors or not torch.cuda.is_available():
    sys.exit(f"cuda_tensors.py needs a GPU and a backend built with CUDA tensors (ringdp_torch.cuda_tensors "
             f"{ringdp_torch.cuda_tensors}, torch.cuda.is_available() {torch.cuda.is_available()})")
rank, size, gloo = init(sys.argv[1])
check = Checks(rank)
device = torch.device("cuda", rank % torch.cuda.device_count())
torch.cuda.set_device(device)


def data(r, count, dtype=torch.float32):
    return ((torch.arange(count) * (r + 3)) % 5 + 1).to(dtype)


def summed(count, dtype):
    return sum(data(r, count, torch.float64) for r in range(size)).to(dtype)


for dtype in (torch.float32, torch.bfloat16, torch.int64):
    for count in (0, 1, 2 * size + 1, (1 << 20) + 3):
        what = f"{count} x {dtype}"
        x = data(rank, count, dtype).to(device)
        dist.all_reduce(x)
        check.equal(f"all_reduce sum of {what}", x.cpu(), summed(count, dtype))
        b = data(rank, count, dtype).to(device)
        dist.broadcast(b, src=size - 1)
        check.equal(f"broadcast from rank {size - 1} of {what}", b.cpu(), data(size - 1, count, dtype))
        whole = torch.empty(count * size, dtype=dtype, device=device)
        dist.all_gather_into_tensor(whole, data(rank, count, dtype).to(device))
        check.equal(f"all_gather_into_tensor of {what}", whole.cpu(),
                    torch.cat([data(r, count, dtype) for r in range(size)]))
        mine = torch.empty(count, dtype=dtype, device=device)
        dist.reduce_scatter_tensor(mine, torch.cat([data(rank, count, dtype)] * size).to(device))
        check.equal(f"reduce_scatter_tensor sum of {what}", mine.cpu(), summed(count, dtype))
avg = data(rank, 1031).to(device)
dist.all_reduce(avg, op=dist.ReduceOp.AVG)
check.close("all_reduce avg of 1031 x float32", avg.cpu(), summed(1031, torch.float32) / size, 4)
# PREMUL_SUM multiplies on the stream before the collective, which must wait for it.
premul = data(rank, 4097).to(device)
dist.all_reduce(premul, op=dist._make_nccl_premul_sum(0.5))
check.equal("all_reduce PREMUL_SUM 0.5 of 4097 x float32", premul.cpu(), summed(4097, torch.float32) * 0.5)

# A side stream made current, as a user's overlap code does: the fill is late (the GPU sleeps
# first), so a collective that waited on another stream would send the old values, and the doubling
# after it would read the unreduced ones if the stream did not wait for the collective.
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    x = torch.zeros(1 << 22, device=device)
    torch.cuda._sleep(50_000_000)
    x.fill_(rank + 1)
    dist.all_reduce(x)
    doubled = x * 2
side.synchronize()
check.equal("all_reduce on a side stream, after a late fill", doubled.cpu(),
            torch.full((1 << 22,), 2.0 * size * (size + 1) / 2))
# Issued on the side stream, waited for on the default one: wait() orders the waiting stream too.
with torch.cuda.stream(side):
    y = torch.zeros(1 << 22, device=device)
    torch.cuda._sleep(50_000_000)
    y.fill_(rank + 1)
    work = dist.all_reduce(y, async_op=True)
work.wait()
tripled = y * 3
torch.cuda.synchronize()
check.equal("all_reduce issued on a side stream, waited for on the default stream", tripled.cpu(),
            torch.full((1 << 22,), 3.0 * size * (size + 1) / 2))

# Out of place on a side stream (it moves data at 1 rank too), from a tensor made on the default
# stream (record_stream keeps its memory from that stream's pool until the side stream is done).
made_elsewhere = torch.zeros(1 << 20, device=device)
with torch.cuda.stream(side):
    torch.cuda._sleep(50_000_000)
    made_elsewhere.fill_(rank + 1)
    gathered = torch.empty((1 << 20) * size, device=device)
    dist.all_gather_into_tensor(gathered, made_elsewhere)
    total = gathered.sum()
del made_elsewhere
side.synchronize()
check.equal("all_gather_into_tensor on a side stream, after a late fill", total.cpu(),
            torch.tensor(float((1 << 20) * size * (size + 1) // 2)))
# send and recv go through host memory.
if size > 1:
    message = torch.arange(1031, dtype=torch.float32, device=device) * (rank + 1)
    if rank == 0:
        dist.send(message, 1)
    elif rank == 1:
        dist.recv(message, 0)
        check.equal("recv of a CUDA tensor from rank 0", (message * 1).cpu(), torch.arange(1031, dtype=torch.float32))
    # On a side stream after a late fill: the sender's host copy waits for the event recorded at the
    # issue, and the receiver's copy back is queued on that stream, before the doubling reads it
    # (comm/execution/host_staging.h).
    with torch.cuda.stream(side):
        late = torch.zeros(1031, device=device)
        torch.cuda._sleep(50_000_000)
        late.fill_(rank + 1)
        if rank == 0:
            dist.send(late, 1)
        elif rank == 1:
            dist.recv(late, 0)
        doubled = late * 2
    side.synchronize()
    if rank == 1:
        check.equal("recv on a side stream, after the sender's late fill", doubled.cpu(), torch.full((1031,), 2.0))
# Every tensor of a call on one device: CPU outputs of a CUDA input are refused by name.
check.raises("all_gather with CPU outputs of a CUDA input", "every tensor of a call must be on one device",
             lambda: dist.all_gather([torch.empty(4) for _ in range(size)], torch.ones(4, device=device)))


# DDP on the GPU over ringdp against DDP on the CPU over gloo: the same model, data and steps.
def train(model_device, group):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).to(model_device)
    ddp = DDP(model, device_ids=[model_device] if model_device.type == "cuda" else None, process_group=group,
              bucket_cap_mb=1)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(5):
        generator = torch.Generator().manual_seed(100 * step + rank)
        inputs, targets = torch.randn(32, 64, generator=generator), torch.randn(32, 8, generator=generator)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(ddp(inputs.to(model_device)), targets.to(model_device)).backward()
        optimizer.step()
    return torch.cat([p.detach().flatten().cpu() for p in model.parameters()])


torch.backends.cuda.matmul.allow_tf32 = False
on_gpu = train(device, dist.group.WORLD)
on_cpu = train(torch.device("cpu"), gloo)
worst = float((on_gpu - on_cpu).abs().max() / on_cpu.abs().max())
if worst > 1e-4:
    check.fail(f"DDP on cuda over ringdp differs from DDP on the CPU over gloo by {worst:.1e} of the largest parameter")
dist.barrier()
print(f"rank {rank}: {check.count} checks of CUDA tensors through ringdp passed on {torch.cuda.get_device_name(device)} "
      f"(DDP against gloo on the CPU: largest difference {worst:.1e})", flush=True)
dist.destroy_process_group()
