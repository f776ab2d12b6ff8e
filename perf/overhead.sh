#!/usr/bin/env bash
# ringdp's per-call cost (issue #20): ringdp-bench's `native` (MPI_Allreduce through the
# communicator) and `auto` against MPI_Allreduce in a plain loop (ringdp-raw-allreduce), small
# sizes, interleaved in each of REPEATS rounds; prints medians and the ratios to the raw loop.
# Every time is the slowest rank's mean over ITERS calls (ringdp-bench -a 3).
#   perf/overhead.sh [NP [REPEATS [MAX_BYTES [ITERS]]]]    (defaults: 2 5 4096 20000: shorter runs swing widely)
# WARMUP=N untimed calls before each size (default 100, for both programs).
# OLD_BUILD=DIR adds DIR's ringdp-bench --algo native (another build, e.g. a worktree of an earlier
# commit) to every round, to compare two builds of the call path in one run.
# BUILD=build-mpich for a build against MPICH (its launcher is read from config.h).
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2} repeats=${2:-5} max=${3:-4096} iters=${4:-20000} warmup=${WARMUP:-100}
source perf/launcher.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$repeats"); do
  "$launcher" -n "$np" "${launch_args[@]}" "$build/perf/ringdp-raw-allreduce" 8 "$max" 8 "$iters" "$warmup" >"$out/raw$i.csv"
  for algo in native auto; do
    "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b 8 -e "$max" -f 8 \
      --algo "$algo" -n "$iters" -w "$warmup" -c 0 -a 3 --csv "$out/$algo$i.csv" >/dev/null
  done
  if [ -n "${OLD_BUILD:-}" ]; then
    "$launcher" -n "$np" "${launch_args[@]}" "$OLD_BUILD/apps/bench/ringdp-bench" all_reduce -b 8 -e "$max" -f 8 \
      --algo native -n "$iters" -w "$warmup" -c 0 -a 3 --csv "$out/old$i.csv" >/dev/null
  fi
done
python3 - "$np" "$impl" "$repeats" "$out" "${OLD_BUILD:-}" <<'PY'
import sys
sys.path.insert(0, "perf")
from rounds import medians, median_difference
np_, impl, repeats, folder, old_build = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
raw = medians(folder, "raw", repeats, "time_us")
native, auto = medians(folder, "native", repeats), medians(folder, "auto", repeats)
print(f"# all_reduce float sum out of place, N = {np_}, {impl}, median of {repeats} interleaved rounds")
print(f"{'bytes':>8} {'raw MPI (us)':>13} {'native (us)':>12} {'ratio':>6} {'+us':>6} {'auto (us)':>10} {'ratio':>6}")
for b in sorted(raw):
    print(f"{b:>8} {raw[b]:>13.3f} {native[b]:>12.3f} {native[b] / raw[b]:>6.2f} {native[b] - raw[b]:>6.2f}"
          f" {auto[b]:>10.3f} {auto[b] / raw[b]:>6.2f}")
if old_build:
    old = medians(folder, "old", repeats)
    d_old, d_new = median_difference(folder, "old", "raw", repeats), median_difference(folder, "native", "raw", repeats)
    print(f"# native of {old_build} in the same rounds; +us per round = the median of each round's difference to raw")
    print(f"{'bytes':>8} {'old native (us)':>16} {'+us':>6} {'+us per round: old':>19} {'this build':>11}")
    for b in sorted(raw):
        print(f"{b:>8} {old[b]:>16.3f} {old[b] - raw[b]:>6.2f} {d_old[b]:>19.3f} {d_new[b]:>11.3f}")
PY
