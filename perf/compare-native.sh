#!/usr/bin/env bash
# Ring, recursive doubling, Rabenseifner and auto against the MPI library's own all-reduce, in the same runs.
# These machines are noisy, so each configuration runs REPEATS times (alternating algorithms
# inside every run via --algo all) and the table reports, per size, the median time of each
# algorithm and the ratio of medians to native. Usage:
#   perf/compare-native.sh [NP [REPEATS [MIN [MAX]]]]     (defaults: 2 5 8 64M)
# BUILD=build-mpich runs a build against MPICH under its own launcher (native is then MPICH's
# MPI_Allreduce): the build's config.h names its MPI and launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-2}
repeats=${2:-5}
min=${3:-8}
max=${4:-64M}
source perf/launcher.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$repeats"); do
  "$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce -b "$min" -e "$max" -f 4 \
    --algo all -n 40 -w 5 -c 1 --csv "$out/run$i.csv" >/dev/null
done
python3 - "$np" "$impl" "$out"/run*.csv <<'PY'
import csv, statistics, sys
from collections import defaultdict
np_, impl, files = sys.argv[1], sys.argv[2], sys.argv[3:]
times = defaultdict(list)
for f in files:
    for row in csv.DictReader(open(f)):
        times[(row["algorithm"], int(row["bytes"]))].append(float(row["time_us_out"]))
sizes = sorted({b for _, b in times})
algos = ["ring", "recursive_doubling", "rabenseifner"]
print(f"# all_reduce float sum, N = {np_}, {impl}, {len(files)} runs; median out-of-place time (us) and ratio to native (<1 is faster)")
print(f"{'bytes':>10} {'native':>10} " + " ".join(f"{a:>18} {'ratio':>6}" for a in algos))
for b in sizes:
    base = statistics.median(times[("native", b)])
    cells = []
    for a in algos:
        t = statistics.median(times[(a, b)])
        cells.append(f"{t:>18.2f} {t / base:>6.2f}")
    print(f"{b:>10} {base:>10.2f} " + " ".join(cells))
PY
