#!/usr/bin/env bash
# A PyTorch DDP job on the ringdp backend that finishes exits 0, every time: RUNS runs of
# tests/torch/exit_clean.py (fp16 hook, no destroy_process_group), each of which must end with
# exit 0, every rank done, and no "terminate called" (issue #47; 3 runs of 80 aborted at exit).
# CI runs a short loop (meson.build); the figure in docs/torch.md is from RUNS=200, run by hand.
#   tests/torch/test_exit_clean.sh MPIEXEC BUILD_DIR NP RUNS
set -uo pipefail
mpiexec=$1 build=$2 np=$3 runs=$4
script="$(cd "$(dirname "$0")" && pwd)/exit_clean.py"
source "$(dirname "$0")/jobs.sh"
start=$SECONDS
for ((run = 1; run <= runs; run++)); do
  job run
  [ $rc -eq 0 ] || fail "run $run of $runs exited $rc: $out"
  ! grep -q "terminate called" <<<"$out" || fail "run $run of $runs: $out"
  [ "$(grep -o ': done' <<<"$out" | wc -l)" -eq "$np" ] || fail "run $run of $runs: not every rank finished: $out"
  [ -s "$dir/params.pt" ] || fail "run $run of $runs saved no parameters"
  rm -rf "$dir"
done
echo "ok: $runs runs of DDP (fp16 hook) on $np ranks exited 0 in $((SECONDS - start)) s"
