#!/usr/bin/env bash
# find_unused_parameters and Join against PyTorch 1.13 (tests/mpi/torch_join.py):
# torch_join.sh NP MPIEXEC TEST_MPI_JOIN [MPIEXEC ARGS...]. ringdp's cases run first (they write
# the data and initial weights), then PyTorch's on the same; the parameters must agree to float64
# rounding. Skips (77), saying why, where Debian's python3-torch with gloo is missing.
set -uo pipefail
source "$(dirname "$0")/../support/free_port.sh"
np=$1 mpiexec=$2 exe=$3
shift 3
torch_python=/usr/bin/python3
if ! "$torch_python" -c 'import torch.distributed as d; from torch.distributed.algorithms.join import Join; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: no python3-torch with gloo and Join (apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TORCH_COMPARE_DIR=$work timeout 120 "$mpiexec" -n "$np" "$@" "$exe" "[.torch]" >"$work/ringdp.log" 2>&1 ||
  { cat "$work/ringdp.log"; echo "FAIL: ringdp's cases"; exit 1; }
for case in unused join join-unused; do
  out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) timeout 120 "$mpiexec" -n "$np" "$@" \
    "$torch_python" "$(dirname "$0")/torch_join.py" "$work" "$case" 2>&1) || { echo "$out"; echo "FAIL: PyTorch's $case"; exit 1; }
  "$torch_python" - "$work" "$case" "$np" <<'PY' || exit 1
import json, sys
work, case, np = sys.argv[1:]
a = json.load(open(f"{work}/ringdp-{case}.json"))["parameters"]
b = json.load(open(f"{work}/torch-{case}.json"))["parameters"]
assert len(a) == len(b), (len(a), len(b))
rel = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))
if rel > 1e-10:
    sys.exit(f"FAIL: {case} on {np} ranks: ringdp and PyTorch differ by {rel:.2e} (relative)")
print(f"ok: {case} on {np} ranks: ringdp and PyTorch 1.13 agree within {rel:.1e}")
PY
done
