#!/usr/bin/env bash
# ringdp's all-reduce with its messages over UCX (--backend ucx: MPI only starts the job) against
# the same over MPI's point-to-point, on one host, interleaved, medians (issue #51 item 7). Per rank
# count, two settings: as users run it (`auto`: the shared-memory all-reduce where it pays, whose
# slots both share, since MPI holds the windows) and messages only (RINGDP_SHM_MAX_BYTES=0: every
# byte through the transport). Sizes 8 B to 2 MiB (x8), then 16 and 64 MiB; out of place.
#   perf/ucx-vs-mpi.sh [ROUNDS [NPS]]       (defaults: 5 "2 4"; BUILD=build-mpich for MPICH)
# Not a test: about 1 minute per rank count and round on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} nps=${2:-2 4}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# load before: $(uptime | sed 's/.*load average/load average/')"
yield_when_idle=${OMPI_MCA_mpi_yield_when_idle-unset}
for np in $nps; do
  # launcher.sh sets Open MPI's yield for this rank count, unless the caller set it: not the last one's.
  if [ "$yield_when_idle" = unset ]; then unset OMPI_MCA_mpi_yield_when_idle; fi
  source perf/launcher.sh
  bench=("$launcher" -n "$np" "${launch_args[@]}" "$build/apps/bench/ringdp-bench" all_reduce)
  for i in $(seq "$rounds"); do
    for shm in on off; do
      for backend in mpi ucx; do
        limit=()
        [ "$shm" = off ] && limit=(env RINGDP_SHM_MAX_BYTES=0)
        name="$out/$np-$shm-$backend-$i"
        "${limit[@]}" "${bench[@]}" --backend "$backend" -b 8 -e 2M -f 8 -n 20 -w 3 --csv "$name-small.csv" >/dev/null
        "${limit[@]}" "${bench[@]}" --backend "$backend" -b 16M -e 64M -f 4 -n 5 -w 1 --csv "$name-large.csv" >/dev/null
      done
    done
  done
done
echo "# load after: $(uptime | sed 's/.*load average/load average/')"
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import csv, glob, os, statistics, sys
out, rounds = sys.argv[1], sys.argv[2]
times = {}
for path in glob.glob(f"{out}/*.csv"):
    np_, shm, backend = os.path.basename(path).split("-")[:3]
    for row in csv.DictReader(open(path)):
        times.setdefault((int(np_), shm, int(row["bytes"]), backend), []).append(float(row["time_us_out"]))
print(f"# all_reduce float32 sum, out of place, median us of {rounds} interleaved rounds; UCX / MPI")
print(f"{'ranks':>5} {'bytes':>9}  {'auto: MPI':>10} {'UCX':>10} {'UCX/MPI':>8}  {'messages only: MPI':>19} {'UCX':>10} {'UCX/MPI':>8}")
for np_, size in sorted({(k[0], k[2]) for k in times}):
    cells = []
    for shm in ("on", "off"):
        mpi, ucx = (statistics.median(times.get((np_, shm, size, b), [float("nan")])) for b in ("mpi", "ucx"))
        cells.append(f"{mpi:>10.1f} {ucx:>10.1f} {ucx / mpi:>8.2f}")
    print(f"{np_:>5} {size:>9}  {cells[0]}  {' ' * 9}{cells[1]}")
PY
