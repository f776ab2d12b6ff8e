#!/usr/bin/env bash
# What a waiting rank costs, with ringdp's waits as they are (RINGDP_SPIN_US, default 50 µs of
# polling, then sleeping) against polling without end (RINGDP_SPIN_US=100000000,
# the waits before issue #47 item 6), interleaved in one run; medians of ROUNDS. Not a test.
#   perf/wait-cost.sh [ROUNDS [LOAD]]
# 1. CPU time of rank 0 while rank 1 arrives 3 s late (RINGDP_FAULT delay), less the same job's
#    without the delay: on shared memory (one host) and over MPI (RINGDP_SHM_MAX_BYTES=0).
# 2. all_reduce of 8 B to 4 KiB on 2 ranks (ringdp-bench), the idle machine.
# 3. With LOAD (a number of busy loops, default 2) beside them: ringdp's DDP step against
#    PyTorch's on gloo (perf/ddp-vs-torch.sh 2 3), once per setting.
set -euo pipefail
cd "$(dirname "$0")/.."
source perf/launcher.sh
rounds=${1:-5} load=${2:-2}
settings=(100000000 50)
label() { [ "$1" = 50 ] && echo "ringdp now (spin 50 us, then sleep)" || echo "poll always (before)"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
train="$build/apps/train/ringdp-train"

# rank0_cpu SPIN SHM DELAY: rank 0's user+system seconds for a 2-epoch job.
rank0_cpu() {
  local out
  # Rank 0's report in a file: a launcher may join or lose ranks' lines of output.
  local report="/tmp/wait-cost.$$.cpu"
  rm -f "$report".*
  RINGDP_SPIN_US=$1 "$launcher" -n 2 "${launch_args[@]}" env ${2:+RINGDP_SHM_MAX_BYTES=$2} \
    ${3:+RINGDP_FAULT=delay:rank=1:op=6:ms=$3} sh -c \
    '/usr/bin/time -o "$1.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" -f "%U %S" "$0" --epochs 2' "$train" "$report" \
    >/dev/null 2>&1 || true
  awk '{ printf "%.3f", $1 + $2 }' "$report.0" 2>/dev/null || true
  rm -f "$report".*

}
echo "== 1. rank 0's CPU during a 3 s wait (seconds; job with the wait less the job without), $rounds rounds"
for shm in "" 0; do
  declare -A waits=()
  for round in $(seq "$rounds"); do
    for spin in "${settings[@]}"; do
      with=$(rank0_cpu "$spin" "$shm" 3000) without=$(rank0_cpu "$spin" "$shm" "")
      [ -n "$with" ] && [ -n "$without" ] || { echo "(a job printed no CPU time; round skipped)"; continue; }
      waits[$spin]+=" $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.3f", a - b }')"
    done
  done
  for spin in "${settings[@]}"; do
    m=$(median ${waits[$spin]})
    printf '%-40s %s: %s s of CPU in 3 s (%s%% of a core); rounds:%s\n' "$(label "$spin")" \
      "$([ -z "$shm" ] && echo "shared memory" || echo "over MPI     ")" "$m" \
      "$(awk -v m="$m" 'BEGIN { printf "%.1f", m / 3 * 100 }')" "${waits[$spin]}"
  done
  unset waits
done

echo "== 2. all_reduce on 2 ranks, idle machine: median time (us) of $rounds rounds"
declare -A times=()
for round in $(seq "$rounds"); do
  for spin in "${settings[@]}"; do
    RINGDP_SPIN_US=$spin "$launcher" -n 2 "${launch_args[@]}" "$build/apps/bench/ringdp-bench" -b 8 -e 4K -f 8 \
      --csv "/tmp/wait-cost.$$.csv" >/dev/null
    while IFS=, read -r bytes t; do times[$spin,$bytes]+=" $t"; done \
      < <(awk -F, 'NR > 1 { print $10 "," $12 }' "/tmp/wait-cost.$$.csv")
  done
done
rm -f "/tmp/wait-cost.$$.csv"
printf '%8s %14s %14s %7s\n' bytes "poll always" "ringdp now" ratio
for bytes in 8 64 512 4096; do
  a=$(median ${times[100000000,$bytes]}) b=$(median ${times[50,$bytes]})
  printf '%8s %14s %14s %7s\n' "$bytes" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
done

[ "$load" -gt 0 ] || exit 0
echo "== 3. DDP step beside $load busy loops: perf/ddp-vs-torch.sh 2 3 per setting"
pids=()
for _ in $(seq "$load"); do (while :; do :; done) & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
for spin in "${settings[@]}"; do
  echo "-- $(label "$spin")"
  RINGDP_SPIN_US=$spin perf/ddp-vs-torch.sh 2 3 | grep -E "^median|^round . ringdp: .*comm"
done
