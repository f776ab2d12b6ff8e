#!/usr/bin/env bash
# docs/examples/seed_fixed.py, the seed article's job corrected, with --backend ringdp and with
# --backend gloo from the same synthetic data and the same initial weights (--init, written here,
# though the script's own initialisation is seeded too): both runs must end with the same
# parameters (float32 rounding apart: the ranks' gradients are added in different orders). With
# `spawn`, both jobs start as the seed article started its own, by mp.spawn (--spawn NP): no MPI,
# ringdp's ranks meet through torch's store.
#   tests/torch/test_seed_fixed.sh MPIEXEC BUILD_DIR NP [spawn]
set -uo pipefail
source "$(dirname "$0")/../support/free_port.sh"
mpiexec=$1 build=$2 np=$3 launch=${4:-mpi}
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" MASTER_ADDR=127.0.0.1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
/usr/bin/python3 - "$work/init.json" <<'PY'
import json, random, sys
rng = random.Random(7)
json.dump({"weight": {"shape": [1, 10], "data": [rng.uniform(-0.3, 0.3) for _ in range(10)]},
           "bias": {"shape": [1], "data": [0.1]}}, open(sys.argv[1], "w"))
PY
for backend in ringdp gloo; do
  # A port of this job's own: the suite's jobs run side by side.
  port=$(free_port)
  if [ "$launch" = spawn ]; then
    out=$(MASTER_PORT=$port timeout 120 /usr/bin/python3 "$root/docs/examples/seed_fixed.py" --spawn "$np" \
      --backend "$backend" --init "$work/init.json" --export "$work/$backend.json" 2>&1) ||
      fail "seed_fixed.py --spawn $np --backend $backend: $out"
  else
    out=$(MASTER_PORT=$port timeout 120 "$mpiexec" -n "$np" /usr/bin/python3 "$root/docs/examples/seed_fixed.py" \
      --backend "$backend" --init "$work/init.json" --export "$work/$backend.json" 2>&1) ||
      fail "seed_fixed.py --backend $backend: $out"
  fi
  grep -q "^epoch 10/10  loss" <<<"$out" || fail "seed_fixed.py --backend $backend ($launch): no last epoch's loss: $out"
done
/usr/bin/python3 - "$work/ringdp.json" "$work/gloo.json" <<'PY' || fail "the parameters differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
worst = max(abs(x - y) / max(abs(y), 1e-3) for k in b for x, y in zip(a[k]["data"], b[k]["data"]))
print(f"ok: seed_fixed.py on ringdp and on gloo end with the same parameters (worst relative difference {worst:.2e})")
sys.exit(0 if a.keys() == b.keys() and worst < 1e-5 else 1)
PY
