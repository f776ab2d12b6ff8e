#!/usr/bin/env bash
# torch.distributed's all_reduce, PyTorch DDP's step and (on PyTorch 2.x) FSDP2's step on the ringdp
# backend against gloo, on 2 and 4 ranks, interleaved in one job each (perf/torch_vs_gloo.py says
# how each figure is made).
#   perf/torch-vs-gloo.sh [ROUNDS [MAX_BYTES]]      (BUILD=build-mpich for MPICH)
# LAUNCH=torchrun starts the ranks with the Python's own torchrun instead of the MPI launcher: no
# MPI, so ringdp meets its peers through torch's store and runs over UCX and its own shared memory
# (PyTorch 2.x: Debian's 1.13 torchrun does not start on Python 3.11). NPS="2" runs 2 ranks only.
# The Python is Debian's (torch 1.13, with this build's module) unless RINGDP_TORCH_PYTHON names
# another, whose environment has ringdp_torch installed (docs/torch.md): the venv scripts/test
# makes is ~/.cache/ringdp/torch-2.15.0/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} max=${2:-$((64 << 20))}
python=${RINGDP_TORCH_PYTHON:-/usr/bin/python3}
modes=(allreduce ddp)
"$python" -c 'from torch.distributed.fsdp import fully_shard' 2>/dev/null && modes+=(fsdp)
"$python" -c 'import torch; print("# PyTorch", torch.__version__, "(" + __import__("sys").executable + ")")'
for np in ${NPS:-2 4}; do
  source perf/launcher.sh
  [ -n "${RINGDP_TORCH_PYTHON:-}" ] || export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
  for mode in "${modes[@]}"; do
    dir=$(mktemp -d)
    if [ "${LAUNCH:-mpi}" = torchrun ]; then
      "$(dirname "$python")/torchrun" --standalone --nproc_per_node "$np" perf/torch_vs_gloo.py "$dir" "$mode" "$rounds" "$max"
    else
      "$launcher" -n "$np" "${launch_args[@]}" "$python" perf/torch_vs_gloo.py "$dir" "$mode" "$rounds" "$max"
    fi
    rm -rf "$dir"
  done
done
