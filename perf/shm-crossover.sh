#!/usr/bin/env bash
# Where the shared-memory all-reduce stops paying: ringdp-bench's `auto` without it
# (RINGDP_SHM_MAX_BYTES=0: recursive doubling, Rabenseifner or the ring) against --algo
# shared_memory, interleaved in ROUNDS rounds; prints medians and the ratio (below 1: shared
# memory faster). Sets the default of RINGDP_SHM_MAX_BYTES (docs/collectives.md). Not a test.
#   perf/shm-crossover.sh [NP [ROUNDS [ITERS [MIN [MAX]]]]]    (defaults: 2 5 200 16K 4M)
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2} rounds=${2:-5} iters=${3:-200} min=${4:-16K} max=${5:-4M}
source perf/launcher.sh
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
for i in $(seq $rounds); do
  RINGDP_SHM_MAX_BYTES=0 "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b $min -e $max -f 2 --algo auto -n $iters -w 5 -c 0 -a 3 --csv $o/auto$i.csv >/dev/null
  "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b $min -e $max -f 2 --algo shm -n $iters -w 5 -c 0 -a 3 --csv $o/shm$i.csv >/dev/null
done
python3 - "$o" "$rounds" "$np" <<'P'
import sys
sys.path.insert(0, "perf")
from rounds import medians
o, r = sys.argv[1], int(sys.argv[2])
a, s = medians(o, "auto", r), medians(o, "shm", r)
print(f"# all_reduce float sum out of place, N = {sys.argv[3]}, median of {r} interleaved rounds")
print("bytes auto(no shm) shm | shm/auto")
for b in sorted(a): print(f"{b:>8} {a[b]:9.2f} {s[b]:9.2f} | {s[b]/a[b]:.2f}")
P
