"""Shared by the torch suite's scripts: each runs as one rank of an mpirun/mpiexec job (run.sh),
with the ringdp backend as the default group and gloo over the same ranks beside it, so that every
result is compared with gloo's in the same run."""
import atexit
import faulthandler
import os
import sys
import time

import torch
import torch.distributed as dist

import ringdp_torch  # noqa: F401  (its import registers the backend)

faulthandler.enable()  # a crash in a library names the Python line that called it


def mpi_rank_and_size():
    """The rank and world size the launcher gave: mpirun's and mpiexec's, or torchrun's and
    tests/torch/spawn.py's (RANK, WORLD_SIZE), which start no MPI."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("RANK", "WORLD_SIZE")):
        if rank_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    sys.exit("run under mpirun, mpiexec, torchrun or mp.spawn (tests/torch/run.sh)")


def _let_gloo_workers_finish():
    """gloo's worker thread drops a finished work's tensors after it has completed the work's
    future, so a script can reach its end while a worker still holds the last reference to a
    tensor Python gave up; dropped once the interpreter is finalizing, that tensor's destructor
    takes the GIL and the thread is ended by force: "terminate called without an active
    exception", from ProcessGroupGloo::runLoop (gloo's, seen 5 times in 128 loaded runs of
    test_ddp.py by ringdp_torch's terminate report). A pause at exit, while the interpreter still
    works, lets the workers finish; nothing collective, so a failing rank cannot hang here.
    Registered after ringdp_torch's import, so it runs before ringdp's exit hook."""
    time.sleep(0.2)


def init(rendezvous_dir):
    """The ringdp default group and a gloo group of the same ranks; returns (rank, size, gloo)."""
    rank, size = mpi_rank_and_size()
    # TEST_INIT_METHOD=env://: the launcher's own store (torchrun's, across hosts: tests/net/torchrun.sh).
    method = os.environ.get("TEST_INIT_METHOD", f"file://{rendezvous_dir}/store")
    dist.init_process_group("ringdp", init_method=method, rank=rank, world_size=size)
    atexit.register(_let_gloo_workers_finish)
    return rank, size, dist.new_group(backend="gloo")


class Checks:
    """Counts checks; a failed one prints what differed and ends the rank with exit 1 (mpirun then
    ends the job)."""

    def __init__(self, rank):
        self.rank, self.count = rank, 0

    def equal(self, what, got, want):
        self.count += 1
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            print(f"FAIL rank {self.rank}: {what}: ringdp {got.dtype} {tuple(got.shape)} {got.flatten()[:8].tolist()}"
                  f" vs reference {want.dtype} {tuple(want.shape)} {want.flatten()[:8].tolist()}", flush=True)
            sys.exit(1)

    def close(self, what, got, want, ulps):
        """Within `ulps` units in the last place of `want` (for results rounded differently)."""
        self.count += 1
        bound = ulps * torch.finfo(want.dtype).eps * want.abs()
        if got.shape != want.shape or not bool(((got - want).abs() <= bound).all()):
            print(f"FAIL rank {self.rank}: {what}: ringdp {got.flatten()[:8].tolist()} not within {ulps} ulp of"
                  f" {want.flatten()[:8].tolist()}", flush=True)
            sys.exit(1)

    def fail(self, what):
        """A check that is not a comparison of tensors, failed."""
        print(f"FAIL rank {self.rank}: {what}", flush=True)
        sys.exit(1)

    def raises(self, what, text, call):
        self.count += 1
        try:
            call()
        except RuntimeError as e:
            if text in str(e):
                return
            print(f"FAIL rank {self.rank}: {what}: RuntimeError without '{text}': {e}", flush=True)
            sys.exit(1)
        print(f"FAIL rank {self.rank}: {what}: no error (expected one with '{text}')", flush=True)
        sys.exit(1)
