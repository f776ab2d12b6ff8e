"""Launching ringdp's apps under the MPI launcher with RINGDP_TRACE=1, and reading the trace
lines back. What the pictures show comes from these lines only, so they are true of the code that
ran; tests/cli/scripts.sh checks the facts parsed from a real run."""
import os
import re
import subprocess

TRACE = "ringdp trace: "
# comm/position.cpp's phase_name(), the phases these pictures meet; two words in "shared memory".
PHASES = ("reduce-scatter", "all-gather", "exchange", "fold-in", "unfold", "shared memory", "signal")
# One step of a collective: "rank 0 all_reduce #1 ring step 1/6 reduce-scatter <what happened>".
STEP = re.compile(r"rank (\d+) (\w+) #(\d+) (\w+) step (\d+)/(\d+) (" + "|".join(PHASES) + r")\b\s*(.*)$")


class RunError(Exception):
    pass


def launch(build, ranks, program, args, env=None):
    """Runs build/PROGRAM on `ranks` ranks with RINGDP_TRACE=1; returns its trace lines (the text
    after "ringdp trace: "). The launcher is $RINGDP_MPIEXEC (what the test suites use) or mpirun."""
    launcher = os.environ.get("RINGDP_MPIEXEC", "mpirun")
    command = [launcher, "-n", str(ranks)]
    if os.environ.get("RINGDP_MPI_IMPL", "openmpi") == "openmpi":
        command += ["--oversubscribe", "--bind-to", "none"]
    command += [os.path.join(build, program)] + list(args)
    run_env = dict(os.environ, RINGDP_TRACE="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_mpi_yield_when_idle="1")
    run_env.update(env or {})
    try:
        done = subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RunError(f"{' '.join(command)}: {e}") from e
    if done.returncode != 0:
        raise RunError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return trace_lines(done.stderr.splitlines())


def trace_lines(lines):
    return [line.split(TRACE, 1)[1].rstrip() for line in lines if TRACE in line]


def collective_steps(lines, kind, algorithm):
    """The steps of the first collective `kind` run by `algorithm` (lowest sequence number):
    [(rank, step, steps, phase, text)], in the order printed. Raises RunError when there is none."""
    parsed = []
    for line in lines:
        m = STEP.match(line)
        if m and m.group(2) == kind and m.group(4) == algorithm:
            parsed.append((int(m.group(3)), int(m.group(1)), int(m.group(5)), int(m.group(6)), m.group(7),
                           m.group(8).strip()))
    if not parsed:
        raise RunError(f"no '{kind}' by '{algorithm}' in the trace (did the trace format change?)")
    first = min(p[0] for p in parsed)
    return [p[1:] for p in parsed if p[0] == first]
