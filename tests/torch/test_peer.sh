#!/usr/bin/env bash
# PyTorch's own distributed tests against ringdp and gloo (issue #37): tests/torch/peer_runner.py
# with the module from the build (or, with RINGDP_TORCH_PYTHON, that Python's: the torch2-peer suite,
# PyTorch 2.x's own tests), under the MPI ringdp was built with. Skipped, with the reason,
# without torch, MPI's launcher, the module or expecttest (which PyTorch's test helpers import; only
# on PyPI: scripts/test puts it in BUILD_DIR/pydeps). The table is left in BUILD_DIR/torch-peer/
# (BUILD_DIR/torch-peer-VERSION/ for another Python's torch).
#   tests/torch/test_peer.sh MPIEXEC BUILD_DIR   (launcher arguments from RINGDP_LAUNCH_ARGS)
set -uo pipefail
mpiexec=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/python.sh"  # Debian's torch with the build's module, or RINGDP_TORCH_PYTHON's (torch2-peer)
if ! "$python" -c 'import importlib.util as u; assert u.find_spec("torch.testing._internal.distributed.distributed_test")' 2>/dev/null; then
  echo "SKIPPED: this torch does not ship torch/testing/_internal/distributed/distributed_test.py"
  exit 77
fi
if ! command -v "$mpiexec" >/dev/null; then
  echo "SKIPPED: no MPI launcher ($mpiexec): the ringdp backend takes its ranks from MPI"
  exit 77
fi
out="$build/torch-peer"
if [ -z "${RINGDP_TORCH_PYTHON:-}" ]; then
  export PYTHONPATH="$build/pydeps:$PYTHONPATH"
else
  out="$build/torch-peer-$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')"
fi
if ! "$python" -c 'import ringdp_torch' 2>/dev/null; then
  echo "SKIPPED: no ringdp_torch module for $python (ninja -C $build builds it where torch is found)"
  exit 77
fi
if ! "$python" -c 'import expecttest' 2>/dev/null; then
  echo "SKIPPED: expecttest is missing (PyTorch's test helpers import it; PyPI only): scripts/test installs it"
  echo "  into $build/pydeps; by hand: /usr/bin/python3 -m pip install --target $build/pydeps expecttest==0.1.3"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1  # more ranks than cores here
exec "$python" "$here/peer_runner.py" --mpiexec "$mpiexec" --out "$out" --check
