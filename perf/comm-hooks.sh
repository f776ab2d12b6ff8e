#!/usr/bin/env bash
# Bytes per step and median DDP step time of each communication hook against the default
# all-reduce (perf/comm_hook_step.cpp: MLP 512→1024→1024→512, batch 32 per rank, float32, CPU).
# One interleaved run: each round runs every (layout, hook) pair once, in the same order, so drift
# on a shared machine spreads over all of them; the table shows the median over rounds of each
# run's median step. The build in BUILD (default build/). Prints the markdown table
# docs/benchmarks.md holds.
#   perf/comm-hooks.sh [--layouts "1x2 1x4"] [--rate 1gbit] [ROUNDS [STEPS]]
# A layout is HOSTSxRANKS_PER_HOST: 1xN is N ranks on this host (shared memory); more hosts are
# network namespaces joined by links shaped to RATE (tests/net/cluster.sh; needs root), the
# case where a hook's saved bytes should pay.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 RINGDP_NET_PREFIX=rdpn-k
layouts="1x2 1x4" rate=1gbit
while [ $# -gt 0 ]; do
  case "$1" in
    --layouts) layouts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    -*) echo "comm-hooks.sh: unknown option '$1'; expected --layouts, --rate, ROUNDS, STEPS" >&2; exit 2 ;;
    *) break ;;
  esac
done
rounds=${1:-5} steps=${2:-10}
hooks=(none fp16 bf16 powersgd:1 powersgd:4)
bench=${BUILD:-build}/perf/ringdp-comm-hook-bench
results=$(mktemp)
trap 'rm -f "$results"' EXIT
run_one() {  # LAYOUT HOOK: appends "LAYOUT <the bench's line>"
  local hosts=${1%x*} per_host=${1#*x} line
  if [ "$hosts" = 1 ]; then
    line=$(mpirun -np "$per_host" --oversubscribe "$bench" "$2" "$steps")
  else
    line=$(tests/net/cluster.sh run --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate" \
      --timeout 600 -- "$bench" "$2" "$steps" | grep '^hook ')
  fi
  echo "$1 $line" >>"$results"
}
for ((round = 1; round <= rounds; round++)); do
  for layout in $layouts; do
    for hook in "${hooks[@]}"; do run_one "$layout" "$hook"; done
  done
done
# Lines: LAYOUT hook H  ranks N  bytes/step B  median step T ms
python3 - "$results" "$rate" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault((f[0], f[2]), []).append((int(f[6]), float(f[9])))
def where(layout):
    hosts, per_host = layout.split("x")
    if hosts == "1":
        return f"{per_host} ranks, 1 host"
    return f"{hosts} hosts × {per_host}, {sys.argv[2]}"
print("| layout | hook | bytes per step (per rank) | vs default | median step (ms) | vs default |")
print("|---|---|---|---|---|---|")
for (layout, hook), runs in rows.items():
    size = runs[0][0]
    step = statistics.median(t for _, t in runs)
    base = rows[(layout, "none")]
    base_size, base_step = base[0][0], statistics.median(t for _, t in base)
    print(f"| {where(layout)} | {hook} | {size:,} | {size / base_size:.3f}× | {step:.2f} | {step / base_step:.2f}× |")
PY
