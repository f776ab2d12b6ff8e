# Sourced by the perf scripts: the MPI a build was made with and its launcher, from the build's
# config.h (BUILD, default build/), so BUILD=build-mpich runs under MPICH's mpiexec. Sets build,
# impl, launcher and launch_args (hydra oversubscribes by default and has no such flag).
build=${BUILD:-build}
impl=$(sed -n 's/^#define RINGDP_MPI_IMPL "\(.*\)"/\1/p' "$build/config.h")
launcher=$(sed -n 's/^#define RINGDP_MPI_LAUNCHER "\(.*\)"/\1/p' "$build/config.h")
launch_args=(--oversubscribe)
[ "$impl" = mpich ] && launch_args=()
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
