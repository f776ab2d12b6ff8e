#!/usr/bin/env bash
# Median DDP step time and communication overlap of the MLP 1024→4096→4096→1024 (batch 64 per
# rank, float32, CPU) on 1, 2 and 4 ranks. Usage: perf/ddp.sh [STEPS [BUCKET_MB]]; the build in BUILD
# (default build/), as the other perf scripts read it.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
for np in 1 2 4; do
  mpirun -np "$np" --oversubscribe "${BUILD:-build}/perf/ringdp-ddp-bench" "${1:-8}" "${2:-25}"
done
