# Shared by the cli tests (sourced): a scratch folder, the OpenMPI settings these machines need,
# and `run_app BINARY LIMIT NP ARGS...`, which runs the app under the launcher of the MPI it was
# built with (RINGDP_MPIEXEC and RINGDP_MPI_IMPL, set by meson: Open MPI's mpirun or MPICH's
# mpiexec) with a hard time limit and sets $out, $rc and $seconds. A hang, or a rank that
# outlives the job, fails the test.
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_rmaps_base_oversubscribe=1

mpiexec=${RINGDP_MPIEXEC:-mpirun}
# Hydra oversubscribes by default and has no such flag.
launch_args=(--oversubscribe)
[ "${RINGDP_MPI_IMPL:-openmpi}" = mpich ] && launch_args=()

fail() { echo "FAIL: $*"; exit 1; }

run_app() {
  local binary=$1 limit=$2 np=$3
  shift 3
  local start=$SECONDS
  out=$(timeout "$limit" "$mpiexec" -n "$np" "${launch_args[@]}" "$binary" "$@" 2>&1)
  rc=$?
  seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "$(basename "$binary") $* hung (killed after $limit s)"
  # Ranks killed by mpirun may take a moment to be reaped; one still there after 5 s is a leak.
  local waited=0
  while pgrep -f "$binary" >/dev/null; do
    [ $waited -lt 50 ] || fail "a rank of '$(basename "$binary") $*' is still running 5 s after the job ended"
    sleep 0.1
    waited=$((waited + 1))
  done
}
