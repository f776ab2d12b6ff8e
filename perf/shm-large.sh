#!/usr/bin/env bash
# The shared-memory all-reduce at mid and large sizes (issue #20, items 2 and 3), interleaved in
# each of ROUNDS rounds: a raw MPI_Allreduce loop (ringdp-raw-allreduce); ringdp's `auto` without
# shared memory (RINGDP_SHM_MAX_BYTES=0: recursive doubling, Rabenseifner or the ring, what it
# chose before shared memory took every size); --algo shm with every round reduced whole
# (RINGDP_SHM_SCATTER_MIN_BYTES above any round); and `auto` as it is (shared memory, rounds of
# 16 KiB and more scattered). Prints medians and the ratios to the raw loop (below 1: faster than
# MPI). Sets the defaults of RINGDP_SHM_MAX_BYTES and RINGDP_SHM_SCATTER_MIN_BYTES
# (docs/lab/benchmarks.md, "Shared memory for large messages"). Not a test.
#   perf/shm-large.sh [NP [ROUNDS [ITERS [MIN [MAX]]]]]    (defaults: 2 5 50 32768 16777216)
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2} rounds=${2:-5} iters=${3:-50} min=${4:-32768} max=${5:-16777216}
source perf/launcher.sh
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
bench() {
  "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b "$min" -e "$max" -f 2 \
    -n "$iters" -w 5 -c 0 -a 3 "$@" >/dev/null
}
for i in $(seq "$rounds"); do
  "$launcher" -n "$np" "${launch_args[@]}" "$build/perf/ringdp-raw-allreduce" "$min" "$max" 2 "$iters" 5 >"$o/raw$i.csv"
  RINGDP_SHM_MAX_BYTES=0 bench --algo auto --csv "$o/before$i.csv"
  RINGDP_SHM_SCATTER_MIN_BYTES=1073741824 bench --algo shm --csv "$o/whole$i.csv"
  bench --algo auto --csv "$o/auto$i.csv"
done
python3 - "$o" "$rounds" "$np" "$impl" <<'P'
import sys
sys.path.insert(0, "perf")
from rounds import medians
o, r = sys.argv[1], int(sys.argv[2])
raw = medians(o, "raw", r, "time_us")
cols = {n: medians(o, n, r) for n in ("before", "whole", "auto")}
print(f"# all_reduce float sum out of place, N = {sys.argv[3]}, {sys.argv[4]}, median of {r} interleaved rounds;"
      " ratio = time / raw MPI's")
print(f"{'bytes':>9} {'raw (us)':>10} | " + " | ".join(f"{n + ' (us)':>16} {'ratio':>5}" for n in cols))
for b in sorted(raw):
    print(f"{b:>9} {raw[b]:>10.1f} | " + " | ".join(f"{c[b]:>16.1f} {c[b] / raw[b]:>5.2f}" for c in cols.values()))
P
