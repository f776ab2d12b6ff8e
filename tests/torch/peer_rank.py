"""One rank of a torch-peer job (tests/torch/peer_runner.py starts it under mpirun/mpiexec): runs
PyTorch's own DistributedTest._DistTestBase tests, unchanged, one after another from a list, each
in a process group of its own (init_process_group before, destroy_process_group after), as
PyTorch's TestDistBackend._run does for a process it spawns. Each test's start and verdict are
appended to this rank's results file (JSON lines, flushed) so the runner can tell, when the job
dies, which test was in progress.

  python3 peer_rank.py --list                      the test names, one per line (no MPI needed)
  python3 peer_rank.py BACKEND TESTS START RESULTS WORK

BACKEND, WORLD_SIZE and TEMP_DIR must be set before distributed_test is imported (it reads them at
import time: BACKEND picks the skips, WORLD_SIZE the require_world_size ones).
"""
import faulthandler
import json
import os
import sys
import time
import unittest
from datetime import timedelta

PER_TEST_TIMEOUT_S = 60  # torch's process-group timeout (PyTorch's default_pg_timeout); see main


def mpi_rank_and_size():
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, int(os.environ.get("WORLD_SIZE", "1"))


def import_distributed_test(backend):
    """distributed_test as PyTorch's spawn runner sees it, with ringdp declared a plugin backend
    that aims at DDP and subgroups (so those tests run on it instead of being skipped by name)."""
    sys.argv = sys.argv[:1]  # common_utils parses sys.argv at import
    import torch.distributed as dist
    import ringdp_torch  # noqa: F401  (registers the backend)
    from torch.testing._internal import common_distributed
    for feature in ("ddp", "plugin", "subgroup"):
        common_distributed.DistTestCases.backend_feature[feature].add("ringdp")
    from torch.testing._internal.distributed import distributed_test
    return dist, common_distributed, distributed_test


def test_names(distributed_test):
    base = distributed_test.DistributedTest._DistTestBase
    return sorted(n for n in dir(base) if n.startswith("test"))


def verdict_of_exit(code, common_distributed):
    """A test may end its process with sys.exit(TEST_SKIPS[...].exit_code) (skip_if_lt_x_gpu and
    the like): the spawn runner reads those codes as skips."""
    if code in (0, None):
        return "passed", ""
    for skip in common_distributed.TEST_SKIPS.values():
        if skip.exit_code == code:
            return "skipped", skip.message
    return "failed", f"sys.exit({code})"


def run_one(case, name, common_distributed):
    """(result, reason) of one test body."""
    try:
        getattr(case, name)()
        return "passed", ""
    except unittest.SkipTest as e:
        return "skipped", str(e)
    except SystemExit as e:
        return verdict_of_exit(e.code, common_distributed)
    except BaseException as e:  # noqa: BLE001  (a verdict for any failure; the job goes on)
        import traceback
        text = "".join(traceback.format_exception(e))
        last = f"{type(e).__name__}: {e}".strip().splitlines()
        return "failed", (last[0] if last else type(e).__name__) + "\n" + text


class Results:
    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def write(self, **record):
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()


def leave_together(test_dir, rank, size, timeout, result):
    """Waits until every rank has finished the test, so that none destroys its group while another
    still uses it (ringdp's destroy waits for its peers); True when every rank passed or skipped.
    Not Barrier.sync: a test that failed on one rank leaves the ranks' Barrier counts apart (a rank
    outside a group passes a barrier the failed members never reach), and Barrier waits out its
    timeout then."""
    done = os.path.join(test_dir, "done")
    os.makedirs(done, exist_ok=True)
    # Written beside, then renamed in: a peer that sees the name reads the whole verdict.
    temp = os.path.join(test_dir, f"done-{rank}.tmp")
    with open(temp, "w", encoding="utf-8") as f:
        f.write(result)
    os.replace(temp, os.path.join(done, str(rank)))
    deadline = time.monotonic() + timeout
    while len(os.listdir(done)) < size:
        if time.monotonic() > deadline:
            return False  # a peer is still in the test: the job ends, the runner reads why
        time.sleep(0.05)
    results = []
    for peer in range(size):
        with open(os.path.join(done, str(peer)), encoding="utf-8") as f:
            results.append(f.read())
    return all(r in ("passed", "skipped") for r in results)


def run_test(dist, distributed_test, common_distributed, backend, index, name, work, timeout, record):
    """init → barrier → test → record(result, reason) → every rank done → destroy, in a folder of
    the test's own under `work` (Barrier's files, test_dir, the file:// store), as
    TestDistBackend's setUp makes one per test. True when every rank passed or skipped."""
    # A skip decided at import (sandcastle_skip_if, skipIf) only marks the method: unittest reads
    # the mark before setUp, so PyTorch's runner starts no processes for it, and we start no group.
    method = getattr(distributed_test.DistributedTest._DistTestBase, name)
    if getattr(method, "__unittest_skip__", False):
        record("skipped", getattr(method, "__unittest_skip_why__", ""))
        return True
    rank, size = mpi_rank_and_size()
    test_dir = os.path.join(work, str(index))
    for sub in ("barrier", "test_dir", "init_dir"):
        os.makedirs(os.path.join(test_dir, sub), exist_ok=True)
    os.environ["TEMP_DIR"] = test_dir
    distributed_test.Barrier.barrier_id = 0

    class Case(distributed_test.TestDistBackend, distributed_test.DistributedTest._DistTestBase):
        pass

    case = Case(name)
    case.rank, case.file_name = rank, os.path.join(test_dir, "init_dir", "store")
    try:
        dist.init_process_group(backend, init_method="file://" + case.file_name, rank=rank, world_size=size,
                                timeout=timedelta(seconds=timeout))
        case._barrier()
    except Exception as e:  # noqa: BLE001
        record("failed", f"init_process_group: {type(e).__name__}: {e}")
        return False
    result, reason = run_one(case, name, common_distributed)
    record(result, reason)  # before the teardown: a job that dies there keeps the verdict
    all_passed = leave_together(test_dir, rank, size, timeout, result)
    if dist.is_initialized():
        dist.destroy_process_group()
    return all_passed


def main():
    if sys.argv[1:] == ["--list"]:
        os.environ.setdefault("BACKEND", "gloo")
        os.environ.setdefault("WORLD_SIZE", "2")
        os.environ.setdefault("TEMP_DIR", "/tmp")
        _, _, distributed_test = import_distributed_test("gloo")
        print("\n".join(test_names(distributed_test)))
        return
    backend, tests_file, start, results_dir, work = sys.argv[1:6]
    rank, size = mpi_rank_and_size()
    os.environ.update(BACKEND=backend, WORLD_SIZE=str(size), TEMP_DIR=work)
    faulthandler.enable()
    dist, common_distributed, distributed_test = import_distributed_test(backend)
    # PyTorch's spawn runner also turns on DDP over ReplicatedTensor (_set_ddp_with_replicated_tensor);
    # not here: its import of torch.distributed._shard fails under Debian's Python 3.11 ("mutable
    # default ... TensorProperties"), which failed every CPU DDP test on gloo and ringdp alike. DDP
    # as users run it is without.
    with open(tests_file, encoding="utf-8") as f:
        names = f.read().split()
    results = Results(os.path.join(results_dir, f"rank{rank}.jsonl"))
    stacks = open(os.path.join(results_dir, f"rank{rank}.stacks"), "a", encoding="utf-8")
    for index in range(int(start), len(names)):
        name = names[index]
        # torch's process-group timeout, PyTorch's for this test; the runner ends a test that runs
        # past its limit (its own, or the timeout and 30 s for init and teardown: a collective
        # waiting for a failed peer must have time to raise on gloo).
        timeout = distributed_test.CUSTOM_PG_TIMEOUT.get(name, PER_TEST_TIMEOUT_S)
        limit = max(float(os.environ.get("PEER_TEST_LIMIT_S", "90")), timeout + 30)
        results.write(event="start", index=index, test=name, time=time.time(), limit=limit)
        # A hung test leaves its Python stack here before the runner ends the job.
        faulthandler.dump_traceback_later(limit - 10, file=stacks)
        began = time.monotonic()

        def record(result, reason):
            results.write(event="end", index=index, test=name, rank=rank, result=result, reason=reason,
                          seconds=round(time.monotonic() - began, 2))

        all_passed = run_test(dist, distributed_test, common_distributed, backend, index, name, work, timeout, record)
        faulthandler.cancel_dump_traceback_later()
        if not all_passed:
            # Every rank ends the job here (each read the same verdicts), and the runner starts the
            # next test in a fresh one: what a failed test leaves behind (a send nobody received)
            # must not reach the next, as PyTorch's runner gives each test fresh processes.
            return


if __name__ == "__main__":
    main()
