"""new_group on the ringdp backend against gloo's groups of the same ranks, in the same run: the even
and the odd ranks, every rank in reverse order, a group of one, a group whose non-members call
nothing; all_reduce, broadcast from a member named by its global rank, all_gather, barrier, and
the world's collectives between and after; a group whose last reference is a pending future's
callback; four Python threads on four groups, started in another order on each rank (each group
must progress on its own, as gloo's do: issue #47 item 7). Then what torch refuses of a rank
outside a group.
    mpirun -n N python3 tests/torch/test_groups.py RENDEZVOUS_DIR   (tests/torch/run.sh)"""
import sys
import threading
import time

import torch
import torch.distributed as dist

from common import Checks, init

rank, size, gloo = init(sys.argv[1])
check = Checks(rank)


def data(r, count, dtype=torch.float32):
    return ((torch.arange(count) * (r + 3)) % 5 + 1).to(dtype)


def compare(name, members, mine_group, gloo_group):
    """Each collective on the ringdp group, against the same on the gloo group."""
    for count in sorted({0, 1, len(members) + 1, 1031}):
        mine, theirs = data(rank, count), data(rank, count)
        dist.all_reduce(mine, group=mine_group)
        if count:  # gloo 1.13 does nothing useful with empty tensors in some collectives
            dist.all_reduce(theirs, group=gloo_group)
            check.equal(f"{name}: all_reduce x{count}", mine, theirs)
        for src in members:
            mine = data(rank, count, torch.int64)
            dist.broadcast(mine, src=src, group=mine_group)
            check.equal(f"{name}: broadcast x{count} from global rank {src}", mine, data(src, count, torch.int64))
        gathered = [torch.empty(count) for _ in members]
        dist.all_gather(gathered, data(rank, count), group=mine_group)
        for g, r in enumerate(members):
            check.equal(f"{name}: all_gather x{count}, group rank {g}", gathered[g], data(r, count))
    dist.barrier(group=mine_group)


# The world's order of group creation is the same on every rank: torch calls every rank's
# new_group, the backend's creator only on members.
parity = [[r for r in range(size) if r % 2 == p] for p in (0, 1)]
even, odd = dist.new_group(parity[0]), dist.new_group(parity[1]) if parity[1] else None
gloo_even, gloo_odd = dist.new_group(parity[0], backend="gloo"), dist.new_group(parity[1], backend="gloo") if parity[1] else None
mine_group, gloo_group = (even, gloo_even) if rank % 2 == 0 else (odd, gloo_odd)
check.equal("rank in the parity group", torch.tensor(dist.get_rank(mine_group)), torch.tensor(rank // 2))
compare("parity group", parity[rank % 2], mine_group, gloo_group)

# torch sorts a group's ranks (distributed_c10d.new_group): listed in reverse, group rank g is still
# global rank g.
reversed_ranks = list(reversed(range(size)))
backwards, gloo_backwards = dist.new_group(reversed_ranks), dist.new_group(reversed_ranks, backend="gloo")
compare("every rank, listed in reverse", sorted(reversed_ranks), backwards, gloo_backwards)

alone = [dist.new_group([r]) for r in range(size)]  # every rank makes every group; joins its own
t = data(rank, 4)
dist.all_reduce(t, group=alone[rank])
check.equal("group of one: all_reduce", t, data(rank, 4))

ends = dist.new_group([0, size - 1]) if size > 1 else None
if ends is not None and rank in (0, size - 1):
    t = data(rank, 9)
    dist.all_reduce(t, group=ends)
    check.equal("ranks 0 and N-1 while the others call nothing", t, data(0, 9) + data(size - 1, 9))
if size > 2 and rank not in (0, size - 1):
    check.equal("a non-member's group", torch.tensor(ends == dist.GroupMember.NON_GROUP_MEMBER), torch.tensor(True))

# A group whose last reference is the callback of a future still pending: torch drops the group
# on the backend's thread that completes the future, which must not join itself (it did:
# std::system_error, "Resource deadlock avoided", and the rank aborted). Rank 0 issues first and
# lets go of the group; the others join a second later, so rank 0's future is still pending then.
if size > 1:
    late = dist.new_group(list(range(size)))
    t = data(rank, 8)
    if rank != 0:
        time.sleep(1)
    seen = []
    fut = late.allreduce([t]).get_future().then(lambda f, g=late: seen.append(g.size()) or f.value())
    dist.destroy_process_group(late)
    del late
    fut.wait()
    check.equal("a group dropped by its pending future's callback: all_reduce", t, sum(data(r, 8) for r in range(size)))
    check.equal("a group dropped by its pending future's callback: the callback ran", torch.tensor(seen), torch.tensor([size]))

# Four threads, each all-reducing on a group of its own (all ranks), against the same on a gloo
# group of its own. The even ranks start them in one order and the odd ranks in the other, a
# pause apart: one call queue for all groups (RINGDP_MPI_THREAD=serialized) would run group 0's
# call on rank 0 while rank 1 runs group 3's, and wait until the timeout.
if size > 1:
    everyone = list(range(size))
    pairs = [(dist.new_group(everyone), dist.new_group(everyone, backend="gloo")) for _ in range(4)]
    failures = []

    def run_group(g, mine_group, gloo_group):
        place = g if rank % 2 == 0 else 3 - g
        time.sleep(0.15 * place)
        try:
            for call in range(20):
                count = 1 + (call * 997) % 5003
                mine, theirs = data(rank, count) + g, data(rank, count) + g
                if call % 2:
                    dist.all_reduce(mine, group=mine_group, async_op=True).wait()
                else:
                    dist.all_reduce(mine, group=mine_group)
                dist.all_reduce(theirs, group=gloo_group)
                if not torch.equal(mine, theirs):
                    failures.append(f"group {g}, call {call}: {mine[:4]} against gloo's {theirs[:4]}")
        except Exception as e:  # noqa: BLE001: reported below, on the main thread
            failures.append(f"group {g}: {e}")

    threads = [threading.Thread(target=run_group, args=(g, *pairs[g])) for g in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check.equal(f"four threads on four groups ({'; '.join(failures)})", torch.tensor(len(failures)), torch.tensor(0))

# The world is untouched by its groups' traffic.
t = data(rank, 100)
dist.all_reduce(t)
want = data(0, 100)
for r in range(1, size):
    want += data(r, 100)
check.equal("world all_reduce after the groups", t, want)
dist.barrier(group=gloo)
print(f"ok: rank {rank} of {size}: {check.count} group checks against gloo or the reference passed", flush=True)
dist.destroy_process_group()
