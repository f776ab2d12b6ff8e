#!/usr/bin/env bash
# torchrun's restarts on the ringdp backend (issue #51 item 4): a DDP job that checkpoints after
# every epoch loses rank 1 (SIGKILL) at epoch 2; torchrun --max-restarts 1 starts every worker
# again, ringdp meets the new attempt through its store, and the job ends with the parameters of an
# uninterrupted run, bit for bit (tests/torch/restart.py). PyTorch 2.x: Debian's 1.13 torchrun does
# not start on Python 3.11.
#   tests/torch/test_restart.sh BUILD_DIR NP
set -uo pipefail
build=$1 np=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/python.sh"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/straight" "$work/restarted"
# torchrun's agent leaves its logs under TMPDIR (torchelastic_*): here, inside $work.
torchrun() { TMPDIR=$work timeout 240 "$python" -m torch.distributed.run --standalone --nproc_per_node "$np" "$@" 2>&1; }
out=$(torchrun "$here/restart.py" "$work/straight" 4) || fail "the uninterrupted run failed: $out"
began=$SECONDS
out=$(torchrun --max-restarts 1 "$here/restart.py" "$work/restarted" 4 2)
rc=$?
[ $rc -eq 0 ] || fail "the run that lost rank 1 did not finish after its restart (exit $rc): $out"
grep -qF "attempt 1 began at epoch 2 and finished epoch 4" <<<"$out" ||
  fail "the restart did not resume from the checkpoint of epoch 2: $out"
"$python" - "$work/straight/final.pt" "$work/restarted/final.pt" <<'PY' || fail "the parameters differ from the uninterrupted run's"
import sys, torch
a, b = (torch.load(p) for p in sys.argv[1:3])
sys.exit(0 if a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a) else 1)
PY
echo "ok: rank 1 killed at epoch 2, torchrun restarted the job, which resumed and ended bit-identical to an uninterrupted run ($((SECONDS - began)) s)"
