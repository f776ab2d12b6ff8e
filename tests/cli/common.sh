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
source "$(dirname "${BASH_SOURCE[0]}")/../support/free_port.sh"
rank_prefix=()  # what each rank's command starts with (run_app_limited's wrapper)

run_app() {
  local binary=$1 limit=$2 np=$3
  shift 3
  local start=$SECONDS
  out=$(timeout "$limit" "$mpiexec" -n "$np" "${launch_args[@]}" "${rank_prefix[@]}" "$binary" "$@" 2>&1)
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

# run_app_limited KIB BINARY LIMIT NP ARGS...: run_app with every rank's writes past KIB KiB
# failing with EFBIG ("File too large"), as a full disk's fail with ENOSPC: a file-size limit needs
# neither root nor a mount. SIGXFSZ is ignored (and stays so across exec) so that the write reports
# the error instead of the signal killing the rank. The limit would also stop the MPIs' own
# shared-memory files, so both talk over TCP here and ringdp makes no shared slots (its window is a
# file too: a ring of slots, 8.6 KB even at 64 B a slot).
run_app_limited() {
  local kib=$1
  shift
  rank_prefix=(bash -c "trap '' XFSZ; ulimit -f $kib; exec \"\$@\"" limited)
  OMPI_MCA_btl=self,tcp UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1 RINGDP_SHM_MAX_BYTES=0 run_app "$@"
  rank_prefix=()
}
