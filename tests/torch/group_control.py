"""What PyTorch 2.x asks of a process group besides its collectives (issue #50 item 2), on ringdp:
  sequence numbers  _get_sequence_number_for_group() counts the collectives issued, equal on every
                    rank (sends and receives are not counted: they involve some ranks only)
  set_timeout       dist.set_timeout(1 s) on a group: a collective that a peer never joins raises
                    the watchdog's report within seconds, not after the 30 minutes the group began with
  shutdown          destroy_process_group completes what the group was still running and joins its
                    threads at once, though Python still holds the group; a later call raises
  abort             _abort_process_group: a later call raises at once
  and destroy_process_group called from a future's callback, which drops the group's last
  reference on the completion thread itself
On PyTorch 1.13, which has none of the others, only the sequence numbers.
A guard ends the job should any wait here hang (the fault this checks for).
    mpirun -n N python tests/torch/group_control.py RENDEZVOUS_DIR   (N >= 2; tests/torch/run.sh)"""
import os
import sys
import threading
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist

from common import Checks, init

rank, size, gloo = init(sys.argv[1])
check = Checks(rank)


def guard(seconds, what):
    """Ends the job, naming `what`, unless cancelled within `seconds`."""
    def fire():
        print(f"FAIL rank {rank}: {what} still waiting after {seconds} s", flush=True)
        os._exit(1)
    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def threads():
    return len(os.listdir("/proc/self/task"))


# --- sequence numbers -----------------------------------------------------------------------------
world = dist.group.WORLD
first = world._get_sequence_number_for_group()
for _ in range(3):
    dist.all_reduce(torch.ones(4))
if size >= 2 and rank < 2:  # not counted
    t = torch.zeros(2)
    dist.send(t, 1) if rank == 0 else dist.recv(t, 0)
seen = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
dist.all_gather(seen, torch.tensor([world._get_sequence_number_for_group()]), group=gloo)
check.equal("sequence numbers after 3 all_reduces and a send", torch.cat(seen),
            torch.full((size,), first + 3, dtype=torch.int64))

# --- a caller that waits completes the call on its own thread -------------------------------------
# Not a completion thread that would then wake it (bindings/torch/completions.h, Call::wait): the
# future's callback, added before the wait, runs on the waiting thread. Rank 0 waits first; its
# peers join a second later, so the collective cannot be done before rank 0 waits.
if rank != 0:
    time.sleep(1)
work = dist.all_reduce(torch.ones(4), async_op=True)
ran_on = []
work.get_future().then(lambda _: ran_on.append(threading.get_ident()))
work.wait()
check.count += 1
if rank == 0 and ran_on != [threading.get_ident()]:
    check.fail(f"the future's callback ran on thread {ran_on}, not on the thread that waited, "
               f"{threading.get_ident()}")

# --- a call behind one its caller completes is completed, though nobody waits for it ---------------
# An all_reduce_coalesced of no tensor has no collective to wait for, so a completion thread takes
# it as soon as it is issued; its wake-up came while the all-reduce before it (which its caller
# then completed) was first in line, not done, and was spent: the future stayed pending until the
# next call. Rank 0 waits for the all-reduce only after that wake-up, and its peers join later.
# On PyTorch 1.13 only: 2.x picks the backend by the first tensor's device and has none here.
if torch.__version__ < "2":
    if rank != 0:
        time.sleep(1)
    work = dist.all_reduce(torch.ones(4), async_op=True)
    with warnings.catch_warnings():  # "will be deprecated"
        warnings.simplefilter("ignore")
        behind = dist.all_reduce_coalesced([], async_op=True)  # a future
    time.sleep(0.2)  # the thread woken for it finds the all-reduce first, not done
    work.wait()
    give_up = time.monotonic() + 5
    while not behind.done() and time.monotonic() < give_up:
        time.sleep(0.01)
    check.count += 1
    if not behind.done():
        check.fail("an all_reduce_coalesced of no tensor, behind a call its caller completed, "
                   "was not completed within 5 s")

if not hasattr(dist, "set_timeout"):  # PyTorch 1.13: what follows is 2.x's
    print(f"rank {rank}: {check.count} checks of PyTorch {torch.__version__}'s sequence numbers passed", flush=True)
    dist.destroy_process_group()
    sys.exit(0)

# --- set_timeout ----------------------------------------------------------------------------------
late = dist.new_group(backend="ringdp")  # torch's 30 minutes
dist.set_timeout(timedelta(seconds=1), group=late)
if rank == 0:
    timer = guard(30, "an all_reduce no peer joins, with a timeout of 1 s,")
    began = time.monotonic()
    check.raises("an all_reduce no peer joins, timeout 1 s", "exceeded 1 s",
                 lambda: dist.all_reduce(torch.ones(4), group=late))
    waited = time.monotonic() - began
    timer.cancel()
    check.count += 1
    if waited > 10:
        sys.exit(f"FAIL rank 0: the timeout of 1 s raised after {waited:.1f} s")
    check.raises("the next call on the group that timed out", "broken",
                 lambda: dist.all_reduce(torch.ones(4), group=late))
dist.barrier(group=gloo)
dist.destroy_process_group(late)

# --- shutdown: destroy_process_group while a collective runs and Python holds the group -------------
before = threads()
held = dist.new_group(backend="ringdp")
big = torch.full((8 << 20,), float(rank + 1))
work = dist.all_reduce(big, group=held, async_op=True)
dist.destroy_process_group(held)
check.count += 1
if not work.is_completed():
    sys.exit(f"FAIL rank {rank}: destroy_process_group returned with the group's all_reduce still running")
check.equal("the all_reduce destroy_process_group completed", big[:4], torch.full((4,), size * (size + 1) / 2))
check.count += 1
if threads() > before + 1:  # the group's call-queue worker lives as long as its communicator
    sys.exit(f"FAIL rank {rank}: {threads() - before} threads more than before the group, after destroy_process_group")
check.raises("a call on a group destroy_process_group shut down", "shut down",
             lambda: held.allreduce([torch.ones(4)]).wait())

# --- shutdown from a future's callback, the group's last reference dropped there too ------------
# The completion thread running the callback stops its own threads (it cannot join itself), then
# the group is destroyed on that same thread: that second stop hung before the threads' ids were
# kept (a detached std::thread forgets its id).
timer = guard(30, "destroy_process_group from a future's callback")
for _ in range(3):
    box = [dist.new_group(backend="ringdp")]
    work = dist.all_reduce(torch.ones(1000), group=box[0], async_op=True)

    def destroy_there(future, box=box):
        dist.destroy_process_group(box[0])
        box.clear()
        return future.value()
    work.get_future().then(destroy_there).wait()
    dist.barrier(group=gloo)
timer.cancel()
check.count += 1

# --- abort ----------------------------------------------------------------------------------------
gone = dist.new_group(backend="ringdp")
dist.all_reduce(torch.ones(4), group=gone)
dist.distributed_c10d._abort_process_group(gone)
check.raises("a call on an aborted group", "aborted", lambda: gone.allreduce([torch.ones(4)]).wait())

dist.barrier()
print(f"rank {rank}: {check.count} checks of PyTorch {torch.__version__}'s group control passed", flush=True)
dist.destroy_process_group()
