# Shared by the torch suite's job scripts (test_leave.sh, test_permuted.sh, test_fork.sh,
# test_exit_clean.sh): each runs one Python script as whole jobs under the launcher of the MPI
# ringdp was built with, and judges what the job printed and how it ended. Source it after
# setting mpiexec, build, np and script; it skips (77) where the Python (tests/torch/python.sh)
# lacks torch with gloo, and makes $work, removed at exit.
source "$(dirname "${BASH_SOURCE[0]}")/python.sh"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1  # more ranks than cores here

source "$(dirname "${BASH_SOURCE[0]}")/plain_launch.sh"

# job MODE [LIMIT]: one $np-rank job of $script with a rendezvous folder of its own ($dir) and
# MODE, under $mpiexec (or plain_launch when it is "plain"); sets $out, $rc and $seconds. A job
# still running after 120 s, or past LIMIT seconds, fails the test.
job() {
  local limit=${2:-120} start=$SECONDS
  dir=$(mktemp -d -p "$work")
  if [ "$mpiexec" = plain ]; then
    out=$(plain_launch "$np" timeout 120 "$python" "$script" "$dir" "$1" 2>&1)
  else
    # shellcheck disable=SC2086  # launcher arguments split on purpose
    out=$(timeout 120 "$mpiexec" ${RINGDP_LAUNCH_ARGS:-} -n "$np" "$python" "$script" "$dir" "$1" 2>&1)
  fi
  rc=$? seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "$1 on $np ranks hung: $out"
  [ $seconds -le "$limit" ] || fail "$1 on $np ranks took $seconds s to end (limit $limit s): $out"
}
