#!/usr/bin/env bash
# torch.distributed's all_reduce and PyTorch DDP's step on the ringdp backend against gloo, on 2 and
# 4 ranks, interleaved in one job each (perf/torch_vs_gloo.py says how each figure is made).
#   perf/torch-vs-gloo.sh [ROUNDS [MAX_BYTES]]      (BUILD=build-mpich for MPICH)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} max=${2:-$((64 << 20))}
for np in 2 4; do
  source perf/launcher.sh
  export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
  for mode in allreduce ddp; do
    dir=$(mktemp -d)
    "$launcher" -n "$np" "${launch_args[@]}" /usr/bin/python3 perf/torch_vs_gloo.py "$dir" "$mode" "$rounds" "$max"
    rm -rf "$dir"
  done
done
