#!/usr/bin/env bash
# All-reduce across hosts made of network namespaces (tests/net/cluster.sh): every algorithm
# against MPI_Allreduce in the same run, for each layout (hosts x ranks per host), on links
# shaped to RATE (and DELAY where the kernel has netem). Prints ringdp-bench's summary and
# ratio tables per layout. Needs root; a build in BUILD (default build/).
#   perf/net-sweep.sh [--rate 10gbit] [--delay 25us] [--max 16M] [--layouts "2x1 2x2 4x1"] [--ddp]
#                     [--backend mpi|ucx]
# --backend ucx: ringdp's messages over UCX (MPI only starts the job; each host has its own IPC
# namespace, so UCX crosses hosts over TCP as between machines); MPI_Allreduce stays MPI's.
# --ddp: instead of the bandwidth sweep, the DDP MLP step (perf/ddp_step.cpp, 8 steps, 25 MB
# buckets) per layout; "1x4" is the one-host baseline to compare "2x2" with.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rate=10gbit delay=25us max=16M layouts="2x1 2x2 4x1" ddp=0 backend=mpi
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --ddp) ddp=1; shift ;;
    --backend)
      backend=$2
      case "$backend" in mpi | ucx) ;; *) echo "net-sweep.sh: --backend '$backend': expected mpi or ucx" >&2; exit 2 ;; esac
      shift 2 ;;
    *) echo "net-sweep.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# The DDP step's program is ringdp's own over MPI (perf/ddp_step.cpp): --backend is the bench's.
[ "$ddp" = 0 ] || [ "$backend" = mpi ] || { echo "net-sweep.sh: --ddp measures over MPI only, not --backend $backend" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGDP_NET_PREFIX=rdpn-s
for layout in $layouts; do
  hosts=${layout%x*} per_host=${layout#*x}
  echo "## $hosts hosts x $per_host ranks, links $rate, backend $backend, $(date -u '+%Y-%m-%d %H:%M UTC')"
  if [ "$ddp" = 1 ]; then
    tests/net/cluster.sh run --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate" --delay "$delay" \
      --timeout 600 -- "$build/perf/ringdp-ddp-bench" 8 25 2>&1 | tail -n 1
    continue
  fi
  tests/net/cluster.sh run --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate" --delay "$delay" \
    --timeout 600 -- "$build/apps/bench/ringdp-bench" all_reduce --backend "$backend" --algo all -b 8 -e "$max" -f 8 -n 20 -w 3 2>&1 |
    sed -n '/^# Summary/,$p'
done
