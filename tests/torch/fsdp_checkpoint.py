"""FSDP2's sharded checkpoint through torch.distributed.checkpoint on the ringdp backend (issue #50
item 6): a small transformer block, fully_shard on its MLP and on the whole, trains 6 AdamW steps,
saves the model's and the optimizer's sharded state (dcp.save: each rank writes its shards, the
plan and the metadata travel through ringdp's object collectives), trains 6 more. A second model,
initialised differently, loads that checkpoint (dcp.load) and trains the same 6 steps: every
parameter shard and the optimizer's state must end bit-for-bit where the uninterrupted run ended.
The checkpoint is also loaded into a model sharded over gloo, whose full parameters must equal
ringdp's at the save. On an odd world size the shards are uneven.
    mpirun -n N python tests/torch/fsdp_checkpoint.py RENDEZVOUS_DIR   (tests/torch/run.sh)"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (get_model_state_dict, get_state_dict, set_model_state_dict,
                                                     set_state_dict)
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

from common import Checks, init
from transformer_block import Block

rank, size, gloo = init(sys.argv[1])
check = Checks(rank)
folder = os.path.join(sys.argv[1], "checkpoint")


def sharded(mesh, seed):
    torch.manual_seed(seed)
    model = Block(width=24)
    fully_shard(model.mlp, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def train(model, optimizer, steps):
    for step in steps:
        x = torch.randn(3, 5, 24, generator=torch.Generator().manual_seed(1000 * step + rank))
        model(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()


def local_state(model, optimizer):
    """Every parameter shard and every optimizer state tensor this rank holds, flattened, in order."""
    parts = [p.to_local().flatten() for p in model.parameters()]
    for p in model.parameters():
        for value in optimizer.state[p].values():
            value = value.to_local() if hasattr(value, "to_local") else value
            parts.append(value.flatten().to(torch.float32))
    return torch.cat(parts)


mesh = init_device_mesh("cpu", (size,))
model, optimizer = sharded(mesh, 0)
train(model, optimizer, range(6))
model_state, optimizer_state = get_state_dict(model, optimizer)
dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)
at_save = [p.full_tensor() for p in model.parameters()]
train(model, optimizer, range(6, 12))
uninterrupted = local_state(model, optimizer)

# Resumed: another initialisation, overwritten by the checkpoint, then the same six steps.
resumed, resumed_optimizer = sharded(mesh, 1)
train(resumed, resumed_optimizer, range(1))  # AdamW's state must exist to be loaded into
model_state, optimizer_state = get_state_dict(resumed, resumed_optimizer)
state = {"model": model_state, "optimizer": optimizer_state}
dcp.load(state, checkpoint_id=folder)
set_state_dict(resumed, resumed_optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
train(resumed, resumed_optimizer, range(6, 12))
check.equal("every shard and optimizer state after resuming from the checkpoint, against the uninterrupted run",
            local_state(resumed, resumed_optimizer), uninterrupted)

# The same checkpoint into a model sharded over gloo: the full parameters ringdp saved.
theirs, _ = sharded(DeviceMesh.from_group(gloo, "cpu"), 2)
their_state = {"model": get_model_state_dict(theirs)}
dcp.load(their_state, checkpoint_id=folder, process_group=gloo)
set_model_state_dict(theirs, their_state["model"])
for (name, p), saved in zip(theirs.named_parameters(), at_save):
    check.equal(f"{name} loaded over gloo from ringdp's checkpoint", p.full_tensor(), saved)

dist.barrier()
print(f"rank {rank}: {check.count} checks of FSDP2's checkpoint on PyTorch {torch.__version__} passed", flush=True)
dist.destroy_process_group()
