#!/usr/bin/env bash
# PyTorch's own distributed tests against ringdp and gloo (issue #37): tests/torch/peer_runner.py
# with the module from the build, under the MPI ringdp was built with. Skipped, with the reason,
# without torch, MPI's launcher, the module or expecttest (which PyTorch's test helpers import; only
# on PyPI: scripts/test puts it in BUILD_DIR/pydeps). The table is left in BUILD_DIR/torch-peer/.
#   tests/torch/test_peer.sh MPIEXEC BUILD_DIR   (launcher arguments from RINGDP_LAUNCH_ARGS)
set -uo pipefail
mpiexec=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: no /usr/bin/python3 with torch and gloo (apt-get install python3-torch)"
  exit 77
fi
if [ ! -f /usr/lib/python3/dist-packages/torch/testing/_internal/distributed/distributed_test.py ]; then
  echo "SKIPPED: this torch does not ship torch/testing/_internal/distributed/distributed_test.py"
  exit 77
fi
if ! command -v "$mpiexec" >/dev/null; then
  echo "SKIPPED: no MPI launcher ($mpiexec): the ringdp backend takes its ranks from MPI"
  exit 77
fi
export PYTHONPATH="$build/python:$build/pydeps${PYTHONPATH:+:$PYTHONPATH}"
if ! /usr/bin/python3 -c 'import ringdp_torch' 2>/dev/null; then
  echo "SKIPPED: no ringdp_torch module in $build/python (ninja -C $build builds it where torch is found)"
  exit 77
fi
if ! /usr/bin/python3 -c 'import expecttest' 2>/dev/null; then
  echo "SKIPPED: expecttest is missing (PyTorch's test helpers import it; PyPI only): scripts/test installs it"
  echo "  into $build/pydeps; by hand: /usr/bin/python3 -m pip install --target $build/pydeps expecttest==0.1.3"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1  # more ranks than cores here
exec /usr/bin/python3 "$here/peer_runner.py" --mpiexec "$mpiexec" --out "$build/torch-peer" --check
