#!/usr/bin/env bash
# torch ranks in another order than MPI's (issue #47): reversed, they run as on gloo (collectives,
# a new_group, send/recv, DDP); every process passing rank 0 is refused on every rank within
# seconds, naming the rank given twice, and the job ends. Before, a permutation was refused on the
# mismatched ranks only, and the job then hung at exit.
#   tests/torch/test_permuted.sh MPIEXEC BUILD_DIR NP
set -uo pipefail
mpiexec=$1 build=$2 np=$3
script="$(cd "$(dirname "$0")" && pwd)/permuted.py"
fail() { echo "FAIL: $*"; exit 1; }
if ! /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: no /usr/bin/python3 with torch and gloo (apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
job() {  # job MODE: sets $out, $rc and $seconds
  local start=$SECONDS dir
  dir=$(mktemp -d -p "$work")
  # shellcheck disable=SC2086  # launcher arguments split on purpose
  out=$(timeout 120 "$mpiexec" ${RINGDP_LAUNCH_ARGS:-} -n "$np" /usr/bin/python3 "$script" "$dir" "$1" 2>&1)
  rc=$? seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "$1 on $np ranks hung: $out"
  [ $seconds -le 40 ] || fail "$1 on $np ranks took $seconds s: $out"
}
job reverse
[ $rc -eq 0 ] || fail "reversed ranks: exit $rc: $out"
[ "$(grep -o '): done' <<<"$out" | wc -l)" -eq "$np" ] || fail "reversed ranks: not every rank finished: $out"
echo "ok: torch ranks in reverse MPI order run as on gloo (${seconds}s)"
job same
[ $rc -ne 0 ] || fail "rank 0 on every process: exit 0: $out"
for ((r = 0; r < np; r++)); do
  grep -qE "MPI rank $r refused: MPI ranks 0 and 1 both asked for rank 0; the ranks must be a permutation of 0..$((np - 1))" <<<"$out" ||
    fail "MPI rank $r was not refused naming the rank given twice: $out"
done
echo "ok: rank 0 on every process is refused on every rank (${seconds}s)"
