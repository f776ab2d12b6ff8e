"""PyTorch's own distributed tests (DistributedTest._DistTestBase from torch's
testing/_internal/distributed/distributed_test.py, unchanged) against the ringdp backend and, in
the same run, against gloo as the baseline, on CPU, under the MPI launcher (issue #37).

Each (backend, world size) is run as mpirun jobs of peer_rank.py. A job runs the tests in order
from a start index; every rank appends each test's start and verdict to its results file. When a
job ends early (ringdp ends the whole job on a fatal error or its watchdog's timeout; a test may
hang past its wall-clock limit, and then this runner ends the job), the test in progress is
recorded as crashed or hung and a new job starts from the next test. After a test that failed on
any rank the ranks end the job themselves, so the next test starts in fresh processes. A test's
verdict merges the ranks: failed on any rank is failed; skipped when it skipped.

  peer_runner.py --mpiexec PATH --out DIR [--np 2 3] [--tests NAME...] [--check]

Writes DIR/peer-table.json and DIR/peer-table.txt (atomically), and prints the summary. With
--check it exits 1 when a test gloo passes does not pass on ringdp and is not explained by a
ringdp gap listed in peer_table.KNOWN_GAPS.
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

import peer_table

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ("gloo", "ringdp")
# Wall-clock limit of one test (peer_rank.py raises it for tests PyTorch gives a longer timeout).
TEST_LIMIT_S = 90
# Tests not run, with the reason; every other test of _DistTestBase runs on both backends.
EXCLUDED = {
    # None: the tests that need CUDA skip themselves (skip_if_lt_x_gpu, require_backend), and the
    # slowest test took 3 s here (full run, 2026-12-02).
}


def list_tests(env):
    out = subprocess.run([sys.executable, os.path.join(HERE, "peer_rank.py"), "--list"], env=env,
                         check=True, capture_output=True, text=True).stdout
    return out.split()


def ringdp_source(env):
    """The commit the ringdp module was built from (its build folder's meson-info names the
    sources), so a dated table says which ringdp it measured."""
    module = subprocess.run([sys.executable, "-c", "import ringdp_torch; print(ringdp_torch.__file__)"], env=env,
                            check=True, capture_output=True, text=True).stdout.strip()
    # <build>/python/ringdp_torch/__init__.py: the build folder is three levels up.
    info = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(module))), "meson-info", "meson-info.json")
    try:
        with open(info, encoding="utf-8") as f:
            source = json.load(f)["directories"]["source"]
        commit = subprocess.run(["git", "-C", source, "describe", "--always", "--dirty"], check=True,
                                capture_output=True, text=True).stdout.strip()
        return f"{module} (built from {source} at {commit})"
    except (OSError, KeyError, subprocess.CalledProcessError):
        return module


def read_events(results_dir, np):
    """{index: {rank: end-event}} and {index: {rank: start-event}}."""
    ends, starts = {}, {}
    for rank in range(np):
        path = os.path.join(results_dir, f"rank{rank}.jsonl")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a crash
                if event["event"] == "start":
                    starts.setdefault(event["index"], {})[rank] = event
                else:
                    ends.setdefault(event["index"], {})[rank] = event
    return ends, starts


def in_progress(ends, starts, np, first):
    """(index, start time, limit) of the earliest test from `first` (this job's) started but not
    ended on every rank, or None."""
    for index in sorted(i for i in starts if i >= first):
        if len(ends.get(index, {})) < np:
            events = starts[index].values()
            return index, min(e["time"] for e in events), max(e.get("limit", TEST_LIMIT_S) for e in events)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args, backend, np, names_file, start, results_dir, work, log):
    # Tests that start a group of their own with INIT_METHOD (env:// here, PyTorch's default)
    # rendezvous at MASTER_ADDR:MASTER_PORT, a port of this job's own.
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), INIT_METHOD="env://",
               PEER_TEST_LIMIT_S=str(args.test_limit))
    command = [args.mpiexec, *shlex.split(args.launch_args), "-n", str(np), sys.executable,
               os.path.join(HERE, "peer_rank.py"), backend, names_file, str(start), results_dir, work]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def wait_job(job, results_dir, np, first):
    """Waits for the job; ends it when one test has run past its limit. Returns (index of the
    test it ended, seconds it ran, limit) for a hang, else None."""
    while job.poll() is None:
        time.sleep(0.5)
        ends, starts = read_events(results_dir, np)
        current = in_progress(ends, starts, np, first)
        if current and time.time() - current[1] > current[2]:
            os.killpg(job.pid, signal.SIGTERM)
            try:
                job.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
            return current[0], time.time() - current[1], current[2]
    return None


# ringdp's lines that report no error: a warning, and the waits and exits that follow one.
NOT_AN_ERROR = re.compile(r"ringdp: (warning: |rank \d+( \(process \d+\))?: (has finished and waits at exit|"
                          r"has left the job and waits for|exits with status \d+ without MPI_Finalize))")


def job_error(log_path):
    """The job's own account of its death: ringdp's error line, else the launcher's last words."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f
                 if line.strip() and not line.startswith("INFO:") and not NOT_AN_ERROR.search(line)]
    for line in lines:
        if line.startswith("ringdp: "):  # ringdp's fatal errors and the watchdog's report
            return line
    # Under PYTHONUNBUFFERED another rank's text may run into that line's start (print() wrote its
    # newline later), so search: after the lines above, as a traceback's "Error: ringdp: " may match
    for line in lines:
        found = re.search(r"ringdp: .*", line)
        if found:
            return found.group(0)
    return " | ".join(lines[-3:]) if lines else "(no output)"


def read_job(job, hang, log_path, results_dir, np, names, start, verdicts):
    """Adds the verdicts of the job that began at `start`; returns where the next job begins
    (len(names) when done), or None when the job ran nothing."""
    ends, starts = read_events(results_dir, np)
    for index in range(start, len(names)):
        if len(ends.get(index, {})) == np:
            verdicts[names[index]] = peer_table.merge(list(ends[index].values()))
            continue
        if index not in starts:
            if index == start:
                return None
            if job.returncode != 0:
                # Every rank gave its verdict, then the job died in the test's teardown.
                previous = verdicts[names[index - 1]]
                previous["reason"] += f" (then the job ended in the teardown: {job_error(log_path)})"
                if previous["result"] == "passed":
                    previous["result"] = "crashed"
            return index  # the ranks ended the job after a failed test, or it died between tests
        # The job ended inside this test.
        if hang and hang[0] == index:
            death = ("hung", f"still running after {hang[1]:.0f} s (limit {hang[2]:.0f} s); the runner ended the job")
        else:
            death = ("crashed", f"the job ended (exit {job.returncode}): {job_error(log_path)}")
        verdicts[names[index]] = peer_table.merge(list(ends.get(index, {}).values()), death)
        return index + 1
    return len(names)


def run_config(args, backend, np, names, out_dir):
    """{test: verdict} for one backend and world size; see peer_table.merge for a verdict."""
    config = f"{backend}-np{np}"
    results_dir = os.path.join(out_dir, config)
    work = tempfile.mkdtemp(prefix=f"peer-{config}-")
    os.makedirs(results_dir, exist_ok=True)
    names_file = os.path.join(results_dir, "tests.txt")
    with open(names_file, "w", encoding="utf-8") as f:
        f.write("\n".join(names) + "\n")
    verdicts, start, jobs = {}, 0, 0
    began = time.monotonic()
    while start < len(names):
        log_path = os.path.join(results_dir, f"job{jobs}.log")
        with open(log_path, "w", encoding="utf-8") as log:
            job = launch(args, backend, np, names_file, start, results_dir, work, log)
            hang = wait_job(job, results_dir, np, start)
        jobs += 1
        start = read_job(job, hang, log_path, results_dir, np, names, start, verdicts)
        if start is None:
            # Nothing ran: the launch itself failed, and every later job would too.
            sys.exit(f"torch-peer: {config}: the job ended before a test began: {job_error(log_path)}")
    seconds = round(time.monotonic() - began, 1)
    print(f"torch-peer: {config}: {len(names)} tests, {jobs} job(s), {seconds} s", flush=True)
    return verdicts, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--launch-args", default=os.environ.get("RINGDP_LAUNCH_ARGS", ""))
    parser.add_argument("--out", required=True)
    parser.add_argument("--np", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--tests", nargs="*", help="run only these tests (for a look at one)")
    parser.add_argument("--test-limit", type=int, default=TEST_LIMIT_S)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    all_tests = list_tests(os.environ)
    chosen = args.tests or all_tests
    unknown = sorted(set(chosen) - set(all_tests))
    if unknown:
        sys.exit(f"torch-peer: not in _DistTestBase: {' '.join(unknown)}")
    names = [n for n in chosen if n not in EXCLUDED]
    table = {"date": time.strftime("%Y-%m-%d"), "ringdp": ringdp_source(os.environ),
             "subset": "named" if args.tests else "all",
             "excluded": {n: EXCLUDED[n] for n in chosen if n in EXCLUDED}, "seconds": {}, "results": {}}
    for np in args.np:
        for backend in args.backends:
            verdicts, seconds = run_config(args, backend, np, names, args.out)
            table["seconds"][f"{backend}-np{np}"] = seconds
            for name, verdict in verdicts.items():
                table["results"].setdefault(name, {}).setdefault(str(np), {})[backend] = verdict
    unexplained = peer_table.write(table, args.out)
    if args.check and unexplained:
        print(f"torch-peer: {len(unexplained)} test(s) pass on gloo but not on ringdp, with no known gap:")
        for line in unexplained:
            print("  " + line)
        sys.exit(1)


if __name__ == "__main__":
    main()
