#!/usr/bin/env bash
# ringdp's own cost per blocking call, in instructions (deterministic, unlike time on these noisy
# machines): callgrind on one rank of ringdp-overhead-probe native (MPI_Allreduce of 8 bytes
# through the communicator) at two call counts; the difference divided by the difference in calls
# leaves out start-up and teardown. Prints one line per MPI thread level.
#   perf/instructions-per-call.sh [LOW [HIGH]]     (defaults: 20000 220000)
# BUILD=DIR measures another build (a worktree of an earlier commit, to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
low=${1:-20000} high=${2:-220000}
[[ "$low" =~ ^[0-9]+$ && "$high" =~ ^[0-9]+$ && "$high" -gt "$low" ]] ||
  { echo "usage: perf/instructions-per-call.sh [LOW [HIGH]] (call counts, HIGH > LOW; got '$low' '$high')" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "perf: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
np=1
source perf/launcher.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# total LEVEL CALLS: every instruction the rank ran.
total() {
  RINGDP_MPI_THREAD=$1 "$launcher" -n 1 "${launch_args[@]}" valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg" "$build/perf/ringdp-overhead-probe" native "$2" >/dev/null 2>"$out/err" ||
    { cat "$out/err" >&2; exit 1; }
  awk '/^(summary|totals):/ {print $2; exit}' "$out/cg"
}
for level in multiple single; do
  a=$(total "$level" "$low") b=$(total "$level" "$high")
  echo "RINGDP_MPI_THREAD=$level: $(( (b - a) / (high - low) )) instructions per call ($build)"
done
