#!/usr/bin/env bash
# Runs one torch-suite script as an NP-rank job under the launcher of the MPI ringdp was built with,
# with a rendezvous folder of its own (the suite's jobs run side by side); or, for MPIEXEC `torchrun`
# or `spawn`, under torchrun (--standalone: a free port of its own) or torch.multiprocessing.spawn
# (tests/torch/spawn.py), or for `plain` as a framework's own launcher may start its workers (NP
# processes given RANK and WORLD_SIZE, nothing more), which start no MPI: the backend then meets
# its peers through torch's store.
#   tests/torch/run.sh MPIEXEC BUILD_DIR NP SCRIPT [ARGS...]   (launcher arguments from RINGDP_LAUNCH_ARGS;
#   the Python from RINGDP_TORCH_PYTHON: tests/torch/python.sh)
set -uo pipefail
mpiexec=$1 build=$2 np=$3 script=$4
shift 4
source "$(dirname "$0")/python.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1  # more ranks than cores here
# Not exec: the trap above removes $work when the job ends. torchrun's agent writes its logs under
# TMPDIR (a torchelastic_* folder it leaves): here, inside $work.
case $mpiexec in
  torchrun)
    TMPDIR=$work timeout 300 "$python" -m torch.distributed.run --standalone --nproc_per_node "$np" "$script" "$work" "$@"
    exit $? ;;
  spawn)
    timeout 300 "$python" "$(dirname "$0")/spawn.py" "$np" "$script" "$work" "$@"
    exit $? ;;
  plain)
    source "$(dirname "$0")/plain_launch.sh"
    plain_launch "$np" timeout 300 "$python" "$script" "$work" "$@"
    exit $? ;;
esac
# shellcheck disable=SC2086  # launcher arguments split on purpose
timeout 300 "$mpiexec" ${RINGDP_LAUNCH_ARGS:-} -n "$np" "$python" "$script" "$work" "$@"
