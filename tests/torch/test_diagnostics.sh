#!/usr/bin/env bash
# ringdp's diagnostics inside a PyTorch job on the ringdp backend, as in ringdp's own programs
# (docs/errors.md): two ranks calling different collectives are reported (at once by the envelope
# check, and by RINGDP_DEBUG=DETAIL naming both calls); RINGDP_FAULT kill ends the job, delay
# brings the watchdog's step-level report; RINGDP_TRACE prints the steps; RINGDP_TIMELINE records
# DDP's bucket all-reduces as ringdp collectives. No case may hang. MPIEXEC `plain`: the ranks
# started as a framework's own launcher starts them (tests/torch/plain_launch.sh), no MPI, so
# every message goes over UCX.
#   tests/torch/test_diagnostics.sh MPIEXEC BUILD_DIR
set -uo pipefail
mpiexec=$1 build=$2
script="$(cd "$(dirname "$0")" && pwd)/diagnostics.py"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
source "$(dirname "$0")/plain_launch.sh"
job() {  # job NP MODE: sets $out, $rc and $seconds
  local start=$SECONDS dir
  dir=$(mktemp -d -p "$work")
  if [ "$mpiexec" = plain ]; then
    out=$(plain_launch "$1" timeout 120 /usr/bin/python3 "$script" "$dir" "$2" 2>&1)
  else
    out=$(timeout 120 "$mpiexec" -n "$1" /usr/bin/python3 "$script" "$dir" "$2" 2>&1)
  fi
  rc=$? seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "$2 on $1 ranks hung: $out"
}

job 2 mismatch
[ $rc -ne 0 ] || fail "ranks calling different collectives ended with exit 0: $out"
# The exception's type and its text apart: MPICH's hydra joins the two ranks' stderr mid-line
# ("RuntimeError: Traceback (most recent call last):", the report on a later line), as it did in
# one run of the final check on 2026-12-05.
grep -q "RuntimeError" <<<"$out" && grep -qE "ringdp: (allreduce|broadcast): rank [01] is in (all_reduce|broadcast) #[0-9]+ .*(the ranks called different collectives|expected)" <<<"$out" ||
  fail "no envelope report reached Python: $out"
echo "ok: a mismatched call is a RuntimeError carrying ringdp's envelope report (${seconds}s)"

RINGDP_DEBUG=DETAIL job 2 mismatch
[ $rc -ne 0 ] || fail "a mismatch under RINGDP_DEBUG=DETAIL ended with exit 0: $out"
grep -qE "collective mismatch \(RINGDP_DEBUG=DETAIL\): rank 0 called all_reduce #[0-9]+ \(sum, 1000 x float32, [a-z_]+\), rank 1 called broadcast #[0-9]+ \(1000 x float32, root 0, [a-z_]+\)" <<<"$out" ||
  fail "no DETAIL report naming both calls: $out"
echo "ok: RINGDP_DEBUG=DETAIL names both calls (${seconds}s)"

RINGDP_FAULT=kill:rank=1:op=6 job 3 train
[ $rc -ne 0 ] || fail "a killed rank left the job with exit 0: $out"
grep -qF "ringdp: rank 1: RINGDP_FAULT kill at all_reduce #6" <<<"$out" || fail "no kill report: $out"
[ $seconds -le 60 ] || fail "the job took $seconds s to end after rank 1 died"
echo "ok: RINGDP_FAULT kill ends the PyTorch job in ${seconds}s"

RINGDP_TIMEOUT=2 RINGDP_FAULT=delay:rank=1:op=8:ms=6000 job 3 train
[ $rc -ne 0 ] || fail "a rank stalled past the timeout ended with exit 0: $out"
grep -q "RuntimeError" <<<"$out" && grep -qE "ringdp: allreduce: rank [02]: all_reduce #8 \([a-z_]+, [0-9]+ x float32, step [0-9]+/[0-9]+ .*waiting for .*rank [0-9]\) exceeded 2 s" <<<"$out" ||
  fail "no step-level watchdog report: $out"
echo "ok: the watchdog's report, naming the step a stalled rank's peers wait in, is their RuntimeError (${seconds}s)"

RINGDP_TRACE=1 job 2 train
[ $rc -eq 0 ] || fail "RINGDP_TRACE=1 run failed: $out"
grep -qE "all_reduce" <<<"$out" || fail "RINGDP_TRACE printed no step: $out"
echo "ok: RINGDP_TRACE prints the steps of DDP's all-reduces ($(grep -c all_reduce <<<"$out") lines)"

RINGDP_TIMELINE="$work/trace" job 2 train
[ $rc -eq 0 ] || fail "RINGDP_TIMELINE run failed: $out"
/usr/bin/python3 - "$work/trace.rank0.json" <<'PY' || fail "the timeline has no all_reduce of DDP's buckets"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
reduces = [e for e in events if e.get("ph") == "X" and e["name"].startswith("all_reduce")]
print(f"ok: RINGDP_TIMELINE recorded {len(reduces)} all_reduce collectives of DDP's 6 steps")
sys.exit(0 if len(reduces) >= 6 else 1)
PY
