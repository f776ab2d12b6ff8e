#!/usr/bin/env bash
# A rank that forks after init_process_group (os.fork(), a DataLoader's workers) goes on, and its
# children leave cleanly: a child's collective raises naming the fork, and its exit touches
# neither MPI nor its parent's threads (issue #48: the child crashed joining them at exit).
#   tests/torch/test_fork.sh MPIEXEC BUILD_DIR NP
set -uo pipefail
mpiexec=$1 build=$2 np=$3
script="$(cd "$(dirname "$0")" && pwd)/fork.py"
source "$(dirname "$0")/jobs.sh"
# A DataLoader's persistent workers are ended at the interpreter's exit before their
# multiprocessing finalizers run, so each leaves a pymp-* folder in TMPDIR: PyTorch's own doing
# (as many without ringdp or torch.distributed, on 1.13 and 2.15), kept inside $work here.
export TMPDIR=$work
for mode in fork dataloader; do
  job $mode
  [ $rc -eq 0 ] || fail "$mode: exit $rc: $out"
  [ "$(grep -o ': done' <<<"$out" | wc -l)" -eq "$np" ] || fail "$mode: not every rank finished: $out"
  if [ $mode = fork ]; then
    # Counted, not lines: MPICH's launcher may join two processes' lines into one.
    [ "$(grep -o "child caught: ringdp: allreduce: this communicator belongs to the process this one was forked from" <<<"$out" | wc -l)" -eq "$np" ] ||
      fail "fork: a child's all_reduce did not raise naming the fork: $out"
  fi
  echo "ok: $mode: the forked children leave cleanly, the ranks go on (${seconds}s)"
done
