#!/usr/bin/env bash
# torch ranks in another order than MPI's (issue #47): reversed, they run as on gloo (collectives,
# a new_group, send/recv, DDP); every process passing rank 0 is refused on every rank within
# seconds, naming the rank given twice, and the job ends. Before, a permutation was refused on the
# mismatched ranks only, and the job then hung at exit.
#   tests/torch/test_permuted.sh MPIEXEC BUILD_DIR NP
set -uo pipefail
mpiexec=$1 build=$2 np=$3
script="$(cd "$(dirname "$0")" && pwd)/permuted.py"
source "$(dirname "$0")/jobs.sh"
job reverse 40
[ $rc -eq 0 ] || fail "reversed ranks: exit $rc: $out"
[ "$(grep -o '): done' <<<"$out" | wc -l)" -eq "$np" ] || fail "reversed ranks: not every rank finished: $out"
echo "ok: torch ranks in reverse MPI order run as on gloo (${seconds}s)"
job same 40
[ $rc -ne 0 ] || fail "rank 0 on every process: exit 0: $out"
for ((r = 0; r < np; r++)); do
  grep -qE "MPI rank $r refused: MPI ranks 0 and 1 both asked for rank 0; the ranks must be a permutation of 0..$((np - 1))" <<<"$out" ||
    fail "MPI rank $r was not refused naming the rank given twice: $out"
done
echo "ok: rank 0 on every process is refused on every rank (${seconds}s)"
