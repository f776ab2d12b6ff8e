# Sourced by the perf scripts: the MPI a build was made with and its launcher, from the build's
# config.h (BUILD, default build/), so BUILD=build-mpich runs under MPICH's mpiexec. Sets build,
# impl, launcher and launch_args (hydra oversubscribes by default and has no such flag).
build=${BUILD:-build}
impl=$(sed -n 's/^#define RINGDP_MPI_IMPL "\(.*\)"/\1/p' "$build/config.h")
launcher=$(sed -n 's/^#define RINGDP_MPI_LAUNCHER "\(.*\)"/\1/p' "$build/config.h")
launch_args=(--oversubscribe)
# scripts/test compiles only its suites' tests in build-mpich/ (perf/ is not among them): bring
# the build up to date first, saying so when that means compiling.
# (grep -c reads the whole dry run: grep -q would stop early, and pipefail would see SIGPIPE.)
if [ "$(ninja -C "$build" -n 2>/dev/null | grep -c '^\[')" != 0 ]; then
  echo "perf: building $build first (ninja -C $build)" >&2
  ninja -C "$build" >/dev/null || { echo "perf: 'ninja -C $build' failed; run it to see why" >&2; exit 1; }
fi
[ "$impl" = mpich ] && launch_args=()
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's own rule: yield the core while polling (its "degraded" mode) only when the ranks
# outnumber the cores. Forcing it on 2 ranks of 2 cores turned every fruitless poll into a
# sched_yield system call and added 0.2-0.6 us to each small collective (docs/benchmarks.md).
# A script that runs more busy threads than ranks (the DDP step's worker) sets it before sourcing.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-$(( ${np:-1} > $(nproc) ? 1 : 0 ))}
