#!/usr/bin/env bash
# All-reduce across hosts made of network namespaces (tests/net/cluster.sh): every algorithm
# against MPI_Allreduce in the same run, for each layout (hosts x ranks per host), on links
# shaped to RATE (and DELAY where the kernel has netem). Prints ringdp-bench's summary and
# ratio tables per layout. Needs root; a build in BUILD (default build/).
#   perf/net-sweep.sh [--rate 10gbit] [--delay 25us] [--max 16M] [--layouts "2x1 2x2 4x1"]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rate=10gbit delay=25us max=16M layouts="2x1 2x2 4x1"
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    *) echo "net-sweep.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGDP_NET_PREFIX=rdpn-s
for layout in $layouts; do
  hosts=${layout%x*} per_host=${layout#*x}
  echo "## $hosts hosts x $per_host ranks, links $rate, $(date -u '+%Y-%m-%d %H:%M UTC')"
  tests/net/cluster.sh run --hosts "$hosts" --ranks-per-host "$per_host" --rate "$rate" --delay "$delay" \
    --timeout 600 -- "$build/apps/bench/ringdp-bench" all_reduce --algo all -b 8 -e "$max" -f 8 -n 20 -w 3 2>&1 |
    sed -n '/^# Summary/,$p'
done
