#!/usr/bin/env bash
# Bytes per step and median DDP step time of each communication hook against the default
# all-reduce, on 2 and 4 ranks (perf/comm_hook_step.cpp: MLP 512→1024→1024→512, batch 32 per rank,
# float32, CPU). One interleaved run: each round runs every (ranks, hook) pair once, in the same
# order, so drift on a shared machine spreads over all of them; the table shows the median over
# rounds of each run's median step. Usage: perf/comm-hooks.sh [ROUNDS [STEPS]]; the build in BUILD
# (default build/). Prints the markdown table docs/benchmarks.md holds.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
rounds=${1:-5} steps=${2:-10}
hooks=(none fp16 bf16 powersgd:1 powersgd:4)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((round = 1; round <= rounds; round++)); do
  for np in 2 4; do
    for hook in "${hooks[@]}"; do
      mpirun -np "$np" --oversubscribe "${BUILD:-build}/perf/ringdp-comm-hook-bench" "$hook" "$steps" >>"$results"
    done
  done
done
# Lines: hook H  ranks N  bytes/step B  median step T ms
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[3], f[1]), []).append((int(f[5]), float(f[8])))
print("| ranks | hook | bytes per step (per rank) | vs default | median step (ms) | vs default |")
print("|---|---|---|---|---|---|")
for (ranks, hook), runs in rows.items():
    size = runs[0][0]
    step = statistics.median(t for _, t in runs)
    base = rows[(ranks, "none")]
    base_size, base_step = base[0][0], statistics.median(t for _, t in base)
    print(f"| {ranks} | {hook} | {size:,} | {size / base_size:.3f}× | {step:.2f} | {step / base_step:.2f}× |")
PY
