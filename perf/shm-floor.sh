#!/usr/bin/env bash
# The all-reduce of large messages against the DRAM floor on one host (issue #39 item 1;
# docs/lab/benchmarks.md, "Shared allocations against the floor"). In each of ROUNDS interleaved
# rounds, per size (16, 64, 256 MiB, float32 sum): the floor, a memcpy of the buffer with every
# rank copying at once (ringdp-reduce-gamma under the launcher: what each rank must move at the
# least, reading its input once and writing its output once); `auto` on plain tensors; `auto` on
# tensors from Communicator::allocate_shared (ringdp-bench --buffers shared: the direct
# all-reduce). Prints the medians, out of place and in place, and each one's ratio to the floor
# (floor time / its time: 1 is the floor, the goal is >= 0.8). Not a test; about a minute per NP
# at 3 rounds on this machine.
#   perf/shm-floor.sh [NP [ROUNDS [ITERS]]]    (defaults: 2 3 5)
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2} rounds=${2:-3} iters=${3:-5}
source perf/launcher.sh
o=$(mktemp -d)
trap 'rm -rf "$o"' EXIT
bench() {
  "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b 16M -e 256M -f 4 \
    -n "$iters" -w 1 -c 0 -a 3 "$@" >/dev/null
}
echo "# load before: $(uptime | sed 's/.*load average/load average/')"
# The floor is each rank's own memcpy time. With more ranks than cores a copy short enough to fit in
# one time slice runs without waiting for a core, while an all-reduce needs every rank's work done.
[ "$np" -gt "$(nproc)" ] && echo "# $np ranks on $(nproc) cores: below a few time slices the floor is optimistic by up to $np/$(nproc)x"
for i in $(seq "$rounds"); do
  "$launcher" -n "$np" "${launch_args[@]}" "$build/perf/ringdp-reduce-gamma" 256 >"$o/floor$i.txt"
  bench --buffers plain --csv "$o/plain$i.csv"
  bench --buffers shared --csv "$o/shared$i.csv"
done
echo "# load after: $(uptime | sed 's/.*load average/load average/')"
/usr/bin/python3 - "$o" "$rounds" "$np" "$impl" <<'P'
import statistics, sys
sys.path.insert(0, "perf")
from rounds import medians
o, r = sys.argv[1], int(sys.argv[2])
floor = {}  # bytes -> memcpy us of each round (ringdp-reduce-gamma's 4th column)
for i in range(1, r + 1):
    for line in open(f"{o}/floor{i}.txt"):
        if not line.startswith("#"):
            f = line.split()
            floor.setdefault(int(f[0]), []).append(float(f[3]))
cols = {f"{n} {w}": medians(o, n, r, f"time_us_{w}") for n in ("plain", "shared") for w in ("out", "in")}
print(f"# all_reduce float32 sum, auto, N = {sys.argv[3]}, {sys.argv[4]}, median of {r} interleaved rounds;"
      " ratio = floor / time (1 = the floor)")
print(f"{'bytes':>10} {'floor (us)':>11} | " + " | ".join(f"{n + ' (us)':>16} {'ratio':>5}" for n in cols))
for b in sorted(cols["plain out"]):
    f = statistics.median(floor[b])
    print(f"{b:>10} {f:>11.0f} | " + " | ".join(f"{c[b]:>16.0f} {f / c[b]:>5.2f}" for c in cols.values()))
P
