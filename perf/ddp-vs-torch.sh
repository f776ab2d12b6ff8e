#!/usr/bin/env bash
# ringdp's DDP step against PyTorch DDP's (gloo) on the same MLP, same machine, same run:
# perf/ddp_step.cpp and perf/ddp_torch.py alternate ROUNDS times on NP ranks; prints each run and
# the ratio of the medians (below 1: ringdp faster). Each round also runs both steps without DDP on
# one rank (`compute only`: the math alone), so the last lines separate what each DDP adds to its
# step from what its math costs. Needs Debian's python3-torch. Not a test.
#   perf/ddp-vs-torch.sh [NP [ROUNDS [STEPS [WIDTHS [BATCH]]]]]
# WIDTHS (layer sizes, default 1024,4096,4096,1024) and BATCH (per rank, default 64) pick the
# model; the seed's job: perf/ddp-vs-torch.sh 4 3 200 10,1 100. BUCKETS=shared: ringdp's buckets in
# shared memory (DdpOptions::shared_buckets; every rank on one host).
set -euo pipefail
cd "$(dirname "$0")/.."
# A rank's worker thread polls while its main thread computes backward: more busy threads than
# cores, so MPI yields while idle, as in every DDP measurement in docs/.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
source perf/launcher.sh
np=${1:-2} rounds=${2:-3} steps=${3:-8} widths=${4:-1024,4096,4096,1024} batch=${5:-64}
/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
  { echo "perf/ddp-vs-torch.sh: needs python3-torch with gloo (apt-get install python3-torch)" >&2; exit 1; }
ours=() theirs=() ours_math=() theirs_math=()
step_of() { sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' <<<"$1"; }
for round in $(seq "$rounds"); do
  line=$("$launcher" -n "$np" "${launch_args[@]}" "$build/perf/ringdp-ddp-bench" "$steps" 25 "$([ "${BUCKETS:-}" = shared ] && echo shared || echo 1)" "$widths" "$batch")
  echo "round $round ringdp:  $line"
  ours+=("$(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' <<<"$line")")
  line=$(MASTER_PORT=$((20000 + RANDOM % 20000)) "$launcher" -n "$np" "${launch_args[@]}" /usr/bin/python3 perf/ddp_torch.py "$steps" "$widths" "$batch")
  echo "round $round pytorch: $line"
  theirs+=("$(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' <<<"$line")")
  line=$("$launcher" -n 1 "${launch_args[@]}" "$build/perf/ringdp-ddp-bench" "$steps" 25 compute "$widths" "$batch")
  echo "round $round ringdp:  $line"
  ours_math+=("$(step_of "$line")")
  line=$("$launcher" -n 1 "${launch_args[@]}" /usr/bin/python3 perf/ddp_torch.py "$steps" "$widths" "$batch" compute)
  echo "round $round pytorch: $line"
  theirs_math+=("$(step_of "$line")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
a=$(median "${ours[@]}") b=$(median "${theirs[@]}")
echo "median of $rounds runs on $np ranks: ringdp $a ms, PyTorch $b ms, ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
c=$(median "${ours_math[@]}") d=$(median "${theirs_math[@]}")
echo "compute only (1 rank, no DDP): ringdp $c ms, PyTorch $d ms, ratio $(awk -v a="$c" -v b="$d" 'BEGIN { printf "%.2f", a / b }')"
echo "DDP step minus compute only: ringdp $(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.1f", a - c }') ms, PyTorch $(awk -v b="$b" -v d="$d" 'BEGIN { printf "%.1f", b - d }') ms"
