"""One rank's part of a PyTorch job on the ringdp backend in which one rank leaves while the others
wait for it, for tests/torch/test_leave.sh. Every rank runs two all_reduces; before the second:
  raise   rank 1 raises an uncaught ValueError
  group   as raise, with a ringdp group beside the default group: that group's leaving must not hold
          back the default group's notice, which the others wait for
  exit0   rank 1 calls sys.exit(0)
  exit1   rank 1 calls sys.exit(1)
  sigint  rank 1 gets SIGINT (Ctrl-C: an uncaught KeyboardInterrupt)
  kill    rank 1 gets SIGKILL (the out-of-memory killer's): it says nothing; without MPI (RANK and
          WORLD_SIZE set by a launcher that does not end the others) its peers see its process end
  extra   rank 0 runs a third all_reduce, which no other rank runs; the others finish
  finish  nobody leaves early: every rank finishes (exit 0)
  late    as finish, with the group's timeout 3 s, but rank 1 sleeps 10 s before it exits: under
          an MPI launcher the others, waiting at exit past that timeout, say so
  gloo    a gloo group beside ringdp's default group: rank 1 raises an uncaught ValueError while
          the others wait in the gloo group's second all_reduce, which only rank 1's process
          ending can end (gloo sees nothing else): its exit must not wait for them for ever
  gloo-exit1  as gloo, but rank 1 catches its ValueError and calls sys.exit(1): no exception ends
          the script, only its exit status says it failed
  timeout the group's timeout is 3 s and rank 1 sleeps 6 s: the others' all_reduce raises the
          watchdog's report, their next call says the group is broken, and they wait for rank 1
          to leave; rank 1, late, runs two more and finds them gone
  mismatch on a new_group of every rank, rank 1's all_reduce has shape [10, 101], the others' [10, 100]: one rank
          finds it (off shared memory: groups have none), and every rank must raise within
          seconds; each then destroys the group and finishes on the default group (exit 0)
A rank whose all_reduce fails prints "rank R caught: <message>", then how long it waited, and
re-raises it.
The default group's timeout stays torch's (30 minutes) but in `timeout`: only a departure can end
these waits.
    mpirun -n N python3 tests/torch/leave.py RENDEZVOUS_DIR MODE
or with RANK and WORLD_SIZE set, and no MPI launcher: the ranks meet through the file store."""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import ringdp_torch  # noqa: F401  (its import registers the backend)

rendezvous, mode = sys.argv[1], sys.argv[2]
rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))))
size = int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))))
timeout = {"timeout": datetime.timedelta(seconds=3)} if mode in ("timeout", "late") else {}
# TEST_INIT_METHOD=env://: the launcher's own store (torchrun's, across hosts: tests/net/torchrun.sh).
method = os.environ.get("TEST_INIT_METHOD", f"file://{rendezvous}/store")
dist.init_process_group("ringdp", init_method=method, rank=rank, world_size=size, **timeout)


def say(line):
    # One write per line: under PYTHONUNBUFFERED print() writes the text and its newline apart, and
    # the ranks share one pipe, so two ranks' lines could run together (a CI run's did).
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def all_reduce():
    t = torch.full((1000,), float(rank))
    began = time.monotonic()
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        say(f"rank {rank} caught: {e}")
        say(f"rank {rank} waited {time.monotonic() - began:.1f} s")
        raise
    if t[0].item() != size * (size - 1) / 2:
        sys.exit(f"rank {rank}: all_reduce gave {t[0].item()}")


all_reduce()
if mode == "mismatch":
    group = dist.new_group(list(range(size)))
    began = time.monotonic()
    try:
        dist.all_reduce(torch.ones(10, 101 if rank == 1 else 100), group=group)
        sys.exit(f"rank {rank}: an all_reduce of [10, 100] against [10, 101] passed")
    except RuntimeError as e:
        say(f"rank {rank} caught after {time.monotonic() - began:.1f} s: {e}")
    dist.destroy_process_group(group)
if mode == "group":
    group = dist.new_group(list(range(size)))
    dist.all_reduce(torch.ones(10), group=group)
if mode in ("gloo", "gloo-exit1"):
    gloo = dist.new_group(list(range(size)), backend="gloo")
    dist.all_reduce(torch.ones(10), group=gloo)
    if rank == 1:
        try:
            raise ValueError("bad sample 17")
        except ValueError as e:
            if mode == "gloo":
                raise
            say(f"rank {rank} failed: {e}")
            sys.exit(1)
    began = time.monotonic()
    try:
        dist.all_reduce(torch.ones(10), group=gloo)
    except RuntimeError as e:
        say(f"rank {rank} caught after {time.monotonic() - began:.1f} s: {e}")
        raise
if rank == 1:
    if mode in ("raise", "group"):
        raise ValueError("bad sample 17")
    if mode == "exit0":
        sys.exit(0)
    if mode == "exit1":
        sys.exit(1)
    if mode == "sigint":
        os.kill(os.getpid(), signal.SIGINT)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "timeout":
        time.sleep(6)
        all_reduce()  # may still complete: the others' parts of it are in their slots
if mode == "timeout" and rank != 1:
    try:
        all_reduce()
    except RuntimeError:
        all_reduce()  # the group is broken: raises at once
all_reduce()
if mode == "extra" and rank == 0:
    all_reduce()
if mode == "late" and rank == 1:
    time.sleep(10)
say(f"rank {rank}: done")
