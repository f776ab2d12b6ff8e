# The environment Open MPI's mpirun needs on these machines. Sourced, not run: by
# scripts/lib/setup.sh (scripts/demo, scripts/test) and by tests/net/cluster.sh, whose `run` is
# started by hand as root (the README's line) as often as by the net suite.

# OpenMPI refuses root and more ranks than cores unless told; these machines need both.
ringdp_mpi_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  # Ranks on an oversubscribed node must yield while they wait, or they starve each other.
  export OMPI_MCA_mpi_yield_when_idle=1
}
