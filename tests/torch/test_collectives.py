"""Every collective of the ringdp backend against gloo's result in the same run (or, where Debian's
gloo 1.13 lacks one, against a reference computed here from every rank's known input): every
dtype ringdp takes, every op, counts 0, 1, one below the world size and one not divisible by it, in
place and out of place, each root. Inputs are small integers, so every result is exact in every
dtype and the comparison is bit-for-bit. gather, scatter, all_to_all (equal and uneven splits),
all_gather of uneven sizes, the coalesced and the *_object forms follow. Then the refusals: what ringdp lacks is a RuntimeError
naming it, never a wrong result.
    mpirun -n N python3 tests/torch/test_collectives.py RENDEZVOUS_DIR   (tests/torch/run.sh)"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from common import Checks, init

rank, size, gloo = init(sys.argv[1])
check = Checks(rank)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.int8, torch.uint8]
OPS = [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
OP_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.PRODUCT: "PRODUCT", ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX"}
COUNTS = sorted({0, 1, max(size - 1, 1), 10 * size + 1, 4099})


def data(r, count, dtype):
    """Rank r's input: small integers (products over 4 ranks stay exact), different per rank."""
    return ((torch.arange(count) * (r + 3)) % 5 + 1).to(dtype)


def local_reduce(op, count, dtype):
    stack = torch.stack([data(r, count, torch.float64) for r in range(size)])
    out = {ReduceOp.SUM: stack.sum(0), ReduceOp.PRODUCT: stack.prod(0), ReduceOp.MIN: stack.min(0).values,
           ReduceOp.MAX: stack.max(0).values}[op]
    # Exact in float64 (at most 5^4); integers wrap as C's do through int64 (a float64 past int8's
    # range cast to it directly is undefined).
    return out.to(dtype) if dtype.is_floating_point else out.to(torch.int64).to(dtype)


# Shapes as torch passes them (the backend's views keep them, for its messages): a scalar, 2-D,
# and 9-D, past ringdp's 8 dims (viewed flat).
for shape in [(), (3, 5), (1, 2, 1, 2, 1, 2, 1, 2, 3)]:
    mine = data(rank, 1, torch.float32).reshape(()) if shape == () else data(rank, 48, torch.float32)[:torch.Size(shape).numel()].reshape(shape)
    theirs = mine.clone()
    dist.all_reduce(mine)
    dist.all_reduce(theirs, group=gloo)
    check.equal(f"all_reduce of shape {list(shape)}", mine, theirs)

for dtype in DTYPES:
    for count in COUNTS:
        for op in OPS:
            name = f"all_reduce {OP_NAMES[op]} {dtype} x{count}"
            mine, theirs = data(rank, count, dtype), data(rank, count, dtype)
            dist.all_reduce(mine, op=op)
            dist.all_reduce(theirs, op=op, group=gloo)
            check.equal(name, mine, theirs)
            check.equal(name + " (reference)", mine, local_reduce(op, count, dtype))
            for root in range(size):
                mine = data(rank, count, dtype)
                dist.reduce(mine, dst=root, op=op)
                if rank == root:
                    check.equal(f"reduce {OP_NAMES[op]} {dtype} x{count} root {root}", mine, local_reduce(op, count, dtype))
            # reduce_scatter: Debian's gloo has none; its all_reduce's chunk is the reference.
            inputs = [data(rank, count, dtype) + r for r in range(size)]
            out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter(out, inputs, op=op)
            whole = torch.cat(inputs)
            dist.all_reduce(whole, op=op, group=gloo)
            # chunk() of an empty tensor yields fewer than `size` chunks: count 0 expects an empty result.
            want = whole.chunk(size)[rank] if count else torch.empty(0, dtype=dtype)
            check.equal(f"reduce_scatter {OP_NAMES[op]} {dtype} x{count}", out, want)
            flat_out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter_tensor(flat_out, torch.cat(inputs), op=op)
            check.equal(f"reduce_scatter_tensor {OP_NAMES[op]} {dtype} x{count}", flat_out, out)
        for root in range(size):
            mine = data(rank, count, dtype)
            dist.broadcast(mine, src=root)
            check.equal(f"broadcast {dtype} x{count} root {root}", mine, data(root, count, dtype))
        gathered = [torch.empty(count, dtype=dtype) for _ in range(size)]
        reference = [torch.empty(count, dtype=dtype) for _ in range(size)]
        dist.all_gather(gathered, data(rank, count, dtype))
        if count:  # Debian's gloo 1.13 dies of SIGFPE on an empty all_gather; ringdp does not
            dist.all_gather(reference, data(rank, count, dtype), group=gloo)
        for r in range(size):
            check.equal(f"all_gather {dtype} x{count} from rank {r}", gathered[r], reference[r])
        flat = torch.empty(size * count, dtype=dtype)
        dist.all_gather_into_tensor(flat, data(rank, count, dtype))
        check.equal(f"all_gather_into_tensor {dtype} x{count}", flat, torch.cat(reference))

# BAND, BOR, BXOR on integers, against gloo's (bit patterns that differ per rank, negatives too).
for dtype in (torch.int64, torch.int32, torch.int8, torch.uint8):
    for count in COUNTS:
        for op, name in ((ReduceOp.BAND, "BAND"), (ReduceOp.BOR, "BOR"), (ReduceOp.BXOR, "BXOR")):
            bits = ((torch.arange(count) * 11 + rank * 37) % 251 - 100).to(dtype)  # int64 to uint8 wraps
            mine, theirs = bits.clone(), bits.clone()
            dist.all_reduce(mine, op=op)
            dist.all_reduce(theirs, op=op, group=gloo)
            check.equal(f"all_reduce {name} {dtype} x{count}", mine, theirs)

# AVG (Debian's gloo has none) and bfloat16 (nor that): against the local reference.
for count in COUNTS:
    mine = data(rank, count, torch.float64)
    dist.all_reduce(mine, op=ReduceOp.AVG)
    # ringdp's avg multiplies by 1/N (kernels/reduce_into.h): one rounding more than a division.
    check.close(f"all_reduce AVG float64 x{count}", mine, local_reduce(ReduceOp.SUM, count, torch.float64) / size, 1)
    mine = data(rank, count, torch.bfloat16)
    dist.all_reduce(mine, op=ReduceOp.MAX)
    check.equal(f"all_reduce MAX bfloat16 x{count}", mine, local_reduce(ReduceOp.MAX, count, torch.bfloat16))
    mine = data(rank, count, torch.float16)
    dist.all_reduce(mine, op=ReduceOp.AVG)
    want = (local_reduce(ReduceOp.SUM, count, torch.float64) / size).to(torch.float16)
    check.close(f"all_reduce AVG float16 x{count}", mine, want, 2)

# bool (gloo 1.13 refuses it): SUM and MAX are "any", PRODUCT and MIN "all", as PyTorch's NCCL
# backend defines them; BAND/BOR/BXOR on the truth values. Against a reference computed here.
BOOL_OPS = {ReduceOp.SUM: "any", ReduceOp.MAX: "any", ReduceOp.BOR: "any", ReduceOp.PRODUCT: "all",
            ReduceOp.MIN: "all", ReduceOp.BAND: "all", ReduceOp.BXOR: "xor"}


def flags(r, count):
    return (torch.arange(count) * (r + 3)) % 5 < 2


def bool_reduce(kind, count):
    stack = torch.stack([flags(r, count) for r in range(size)]).to(torch.int64)
    if kind == "any":
        return stack.sum(0) > 0
    if kind == "all":
        return stack.sum(0) == size
    return stack.sum(0) % 2 == 1


for count in COUNTS:
    for op, kind in BOOL_OPS.items():
        mine = flags(rank, count)
        dist.all_reduce(mine, op=op)
        check.equal(f"all_reduce {op} bool x{count}", mine, bool_reduce(kind, count))
        mine = flags(rank, count)
        dist.reduce(mine, dst=size - 1, op=op)
        if rank == size - 1:
            check.equal(f"reduce {op} bool x{count}", mine, bool_reduce(kind, count))
    out = torch.empty(count, dtype=torch.bool)
    dist.reduce_scatter(out, [flags(rank, count) ^ (r % 2 == 1) for r in range(size)], op=ReduceOp.SUM)
    want = torch.stack([flags(q, count) ^ (rank % 2 == 1) for q in range(size)]).any(0)
    check.equal(f"reduce_scatter SUM bool x{count}", out, want)
    mine = flags(rank, count)
    dist.broadcast(mine, src=size - 1)
    check.equal(f"broadcast bool x{count}", mine, flags(size - 1, count))
    flat = torch.empty(size * count, dtype=torch.bool)
    dist.all_gather_into_tensor(flat, flags(rank, count))
    check.equal(f"all_gather_into_tensor bool x{count}", flat, torch.cat([flags(r, count) for r in range(size)]))
check.raises("AVG on bool", "reduce op avg is not defined for bool tensors",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool), op=ReduceOp.AVG))

# The *_object collectives pickle into uint8 tensors and exchange their int64 sizes first.
objects = [None] * size
dist.all_gather_object(objects, {"rank": rank, "name": "r" * (rank + 1)})
check.equal("all_gather_object", torch.tensor([o["rank"] == r and o["name"] == "r" * (r + 1) for r, o in enumerate(objects)]),
            torch.ones(size, dtype=torch.bool))
listing = [f"from rank {rank}", rank] if rank == size - 1 else [None, None]
dist.broadcast_object_list(listing, src=size - 1)
check.equal("broadcast_object_list", torch.tensor(listing == [f"from rank {size - 1}", size - 1]), torch.tensor(True))

# A non-contiguous tensor is reduced through a contiguous copy and written back in place.
matrix = data(rank, 6 * 4, torch.float32).reshape(6, 4)
column = matrix[:, 1]
dist.all_reduce(column)
check.equal("all_reduce of a non-contiguous column", matrix[:, 1], local_reduce(ReduceOp.SUM, 24, torch.float32).reshape(6, 4)[:, 1])
check.equal("the rest of the matrix is untouched", matrix[:, 0], data(rank, 24, torch.float32).reshape(6, 4)[:, 0])

# allreduce_coalesced, async_op, the future DDP's hooks read, send/recv around the ring, barrier.
tensors = [data(rank, 3, torch.float32), data(rank, 5, torch.float32)]
dist.all_reduce_coalesced(tensors)
check.equal("all_reduce_coalesced", tensors[1], local_reduce(ReduceOp.SUM, 5, torch.float32))
work = dist.all_reduce(data(rank, 7, torch.float32), async_op=True)
work.wait()
check.equal("async all_reduce's future", work.get_future().value()[0], local_reduce(ReduceOp.SUM, 7, torch.float32))
# Several calls in flight at once, waited for in reverse order: they complete in issue order on
# every rank, each into its own tensor.
in_flight = [data(rank, 1000 + i, torch.float32) for i in range(6)]
works = [dist.all_reduce(t, async_op=True) for t in in_flight]
for work in reversed(works):
    work.wait(timedelta(seconds=120))
for i, (t, work) in enumerate(zip(in_flight, works)):
    check.equal(f"in-flight all_reduce {i}", t, local_reduce(ReduceOp.SUM, 1000 + i, torch.float32))
    check.equal(f"in-flight all_reduce {i} is complete", torch.tensor(work.is_completed()), torch.tensor(True))
if size > 1:
    # A receive posted before a collective whose peer sends only after that collective: the
    # collective's completion must not wait behind the receive (it did, and the job hung).
    early = torch.empty(5, dtype=torch.int64)
    pending = dist.irecv(early, src=(rank - 1) % size)
    total = data(rank, 3, torch.float32)
    dist.all_reduce(total)
    dist.send(data(rank, 5, torch.int64), dst=(rank + 1) % size)
    pending.wait(timedelta(seconds=120))
    check.equal("a receive posted before an all_reduce, sent after it", early, data((rank - 1) % size, 5, torch.int64))
    received = torch.empty(9, dtype=torch.int64)
    if rank % 2 == 0:
        dist.send(data(rank, 9, torch.int64), dst=(rank + 1) % size)
        dist.recv(received, src=(rank - 1) % size)
    else:
        dist.recv(received, src=(rank - 1) % size)
        dist.send(data(rank, 9, torch.int64), dst=(rank + 1) % size)
    check.equal("recv from the left neighbour", received, data((rank - 1) % size, 9, torch.int64))
    # recv without src: the last rank hears every other, and each answer names its sender.
    if rank == size - 1:
        heard = []
        for _ in range(size - 1):
            t = torch.empty(4, dtype=torch.int64)
            sender = dist.recv(t)
            heard.append(sender)
            check.equal(f"recv from any source: the payload of rank {sender}", t, data(sender, 4, torch.int64))
        for _ in range(size - 1):
            t = torch.empty(4, dtype=torch.int64)
            work = dist.irecv(t)
            work.wait()
            heard.append(work._source_rank())
            check.equal("irecv from any source", t, data(heard[-1], 4, torch.int64))
        check.equal("recv from any source heard every rank twice", torch.tensor(sorted(heard)),
                    torch.tensor(sorted(list(range(size - 1)) * 2)))
    else:
        dist.send(data(rank, 4, torch.int64), dst=size - 1)
        dist.send(data(rank, 4, torch.int64), dst=size - 1)
dist.barrier()

# gather, scatter, all_to_all and all_gather of uneven sizes, against gloo's (every dtype gloo takes,
# each root, counts 0 and 1 and not divisible by the world size).
for dtype in (torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8, torch.float16):
    for count in COUNTS:
        for root in range(size):
            outs = [torch.empty(count, dtype=dtype) for _ in range(size)] if rank == root else None
            refs = [torch.empty(count, dtype=dtype) for _ in range(size)] if rank == root else None
            dist.gather(data(rank, count, dtype), outs, dst=root)
            if count:
                dist.gather(data(rank, count, dtype), refs, dst=root, group=gloo)
            if rank == root:
                for r in range(size):
                    check.equal(f"gather {dtype} x{count} root {root} from rank {r}", outs[r], data(r, count, dtype))
            pieces = [data(r, count, dtype) + root for r in range(size)] if rank == root else None
            mine = torch.empty(count, dtype=dtype)
            dist.scatter(mine, pieces, src=root)
            if count:
                theirs = torch.empty(count, dtype=dtype)
                dist.scatter(theirs, pieces, src=root, group=gloo)
                check.equal(f"scatter {dtype} x{count} root {root}", mine, theirs)
            check.equal(f"scatter {dtype} x{count} root {root} (reference)", mine, data(rank, count, dtype) + root)
        # all_to_all_single, equal splits: chunk j of rank r's input holds r·100 + j.
        send = torch.cat([torch.full((count,), rank * 10 + j) for j in range(size)]).to(dtype)
        mine, theirs = torch.empty(size * count, dtype=dtype), torch.empty(size * count, dtype=dtype)
        dist.all_to_all_single(mine, send)
        want = torch.cat([torch.full((count,), r * 10 + rank) for r in range(size)]).to(dtype)
        check.equal(f"all_to_all_single {dtype} x{count}", mine, want)
        if count:
            dist.all_to_all_single(theirs, send, group=gloo)
            check.equal(f"all_to_all_single {dtype} x{count} (gloo)", mine, theirs)
    # Uneven splits: rank r sends (r + j) % 3 rows of 2 elements to rank j (zero rows included).
    rows_to = [(rank + j) % 3 for j in range(size)]
    rows_from = [(r + rank) % 3 for r in range(size)]
    send = torch.cat([torch.full((n, 2), rank * 10 + j) for j, n in enumerate(rows_to)]).to(dtype)
    mine = torch.empty((sum(rows_from), 2), dtype=dtype)
    dist.all_to_all_single(mine, send, output_split_sizes=rows_from, input_split_sizes=rows_to)
    want = torch.cat([torch.full((n, 2), r * 10 + rank) for r, n in enumerate(rows_from)]).to(dtype)
    check.equal(f"all_to_all_single uneven {dtype}", mine, want)
    theirs = torch.empty_like(mine)
    dist.all_to_all_single(theirs, send, output_split_sizes=rows_from, input_split_sizes=rows_to, group=gloo)
    check.equal(f"all_to_all_single uneven {dtype} (gloo)", mine, theirs)
    # all_to_all of lists, uneven: rank r sends r + j + 1 elements to rank j.
    inputs = [torch.full((rank + j + 1,), rank * 10 + j).to(dtype) for j in range(size)]
    outputs = [torch.empty(r + rank + 1, dtype=dtype) for r in range(size)]
    dist.all_to_all(outputs, inputs)
    for r in range(size):
        check.equal(f"all_to_all {dtype} from rank {r}", outputs[r], torch.full((r + rank + 1,), r * 10 + rank).to(dtype))
    # all_gather of uneven sizes (gloo 1.13 refuses them): rank r contributes 2r + 1 elements.
    gathered = [torch.empty(2 * r + 1, dtype=dtype) for r in range(size)]
    dist.all_gather(gathered, data(rank, 2 * rank + 1, dtype))
    for r in range(size):
        check.equal(f"all_gather uneven {dtype} from rank {r}", gathered[r], data(r, 2 * r + 1, dtype))
# all_gather_coalesced: two tensors of different shapes per rank, against gloo's.
mine = [[torch.empty(3), torch.empty(2, 2)] for _ in range(size)]
theirs = [[torch.empty(3), torch.empty(2, 2)] for _ in range(size)]
ins = [data(rank, 3, torch.float32), data(rank + 1, 4, torch.float32).reshape(2, 2)]
dist.all_gather_coalesced(mine, ins)
dist.all_gather_coalesced(theirs, ins, group=gloo)
for r in range(size):
    check.equal(f"all_gather_coalesced from rank {r}, first", mine[r][0], theirs[r][0])
    check.equal(f"all_gather_coalesced from rank {r}, second", mine[r][1], theirs[r][1])
# scatter_object_list and gather_object ride on scatter and gather.
objs = [None]
dist.scatter_object_list(objs, [{"to": r} for r in range(size)] if rank == 0 else None, src=0)
check.equal("scatter_object_list", torch.tensor(objs[0] == {"to": rank}), torch.tensor(True))
got = [None] * size if rank == size - 1 else None
dist.gather_object(("from", rank), got, dst=size - 1)
if rank == size - 1:
    check.equal("gather_object", torch.tensor(got == [("from", r) for r in range(size)]), torch.tensor(True))

# What ringdp lacks, or what is wrong, is refused by name.
check.raises("uneven splits that do not sum to the rows", "split sizes sum to",
             lambda: dist.all_to_all_single(torch.empty(size + 1), torch.ones(size + 1), output_split_sizes=[1] * size,
                                            input_split_sizes=[1] * size))
check.raises("BAND on float32", "reduce op band is not defined for float32 tensors", lambda: dist.all_reduce(torch.ones(4), op=ReduceOp.BAND))
# PREMUL_SUM (gloo refuses it): every input times the factor, then the sum; exact here.
premul = torch.full((2 * size + 1,), float(rank + 1))
dist.all_reduce(premul, op=dist._make_nccl_premul_sum(0.5))
check.equal("all_reduce PREMUL_SUM 0.5", premul, torch.full((2 * size + 1,), 0.5 * size * (size + 1) / 2))
check.raises("reduce with PREMUL_SUM", "ReduceOp.PREMUL_SUM is not supported by ringdp's reduce",
             lambda: dist.reduce(torch.ones(4), 0, op=dist._make_nccl_premul_sum(2.0)))
check.raises("int16", "has dtype Short, which ringdp does not support", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)))
# complex64 needs nothing of ringdp: torch.distributed sums it as float32 pairs (view_as_real).
z = torch.full((3,), complex(1, -2)) * (rank + 1)
dist.all_reduce(z)
check.equal("all_reduce of complex64 (as float32 pairs)", z, torch.full((3,), complex(1, -2)) * (size * (size + 1) // 2))
check.raises("wrong gather size", "all_gather_into_tensor's output has 3 elements; expected", lambda: dist.all_gather_into_tensor(torch.empty(3), torch.ones(4)))
dist.barrier(group=gloo)
print(f"ok: rank {rank} of {size}: {check.count} checks against gloo or the reference passed", flush=True)
dist.destroy_process_group()
