#!/usr/bin/env bash
# How the ringdp backend is launched (docs/torch.md): without an MPI launcher a job of several ranks
# meets through torch's store (torchrun and mp.spawn: tests/torch/spawn.py and the torch2 suite run
# whole jobs so), and a rank that never arrives is named when torch's timeout passes, never waited
# for; under one, ranks in another order than MPI's are taken (as gloo;
# tests/torch/test_permuted.sh checks the results and refuses what is not a permutation); a world
# of one needs no launcher.
#   tests/torch/test_launch.sh MPIEXEC BUILD_DIR
set -uo pipefail
mpiexec=$1 build=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
init() {  # init RANK_EXPR SIZE_EXPR: python that calls init_process_group("ringdp", ...)
  cat <<PY
import os, sys, datetime, torch.distributed as dist, ringdp_torch
rank = $1
size = $2
timeout = datetime.timedelta(seconds=float(os.environ.get("TIMEOUT", "1800")))
try:
    dist.init_process_group("ringdp", init_method="file://$work/store" + os.environ.get("STORE", ""), rank=rank, world_size=size,
                            timeout=timeout)
except RuntimeError as e:
    print("RuntimeError:", e)
    sys.exit(3)
print(f"initialised rank {dist.get_rank()} of {dist.get_world_size()}")  # one write: launchers interleave writes
PY
}
if ! grep -q "define RINGDP_HAVE_UCX 1" "$build/config.h"; then
  echo "ok: (skipped: built without UCX, a job without an MPI launcher cannot start)"
else
  began=$(date +%s)
  out=$(STORE=a TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init 0 2)" 2>&1)
  rc=$? took=$(($(date +%s) - began))
  [ $rc -eq 3 ] || fail "rank 1 of 2 never started: exit $rc, expected the RuntimeError: $out"
  grep -qF "rank 0 of 2: rank 1 never joined the store bootstrap (ringdp#1) within 3 s" <<<"$out" ||
    fail "the missing rank is not named: $out"
  [ $took -lt 30 ] || fail "the missing rank was named after $took s, with a timeout of 3 s"
  echo "ok: without a launcher, a rank that never arrives is named after torch's timeout (3 s; took $took s)"
  # Two ranks given different world sizes: the one that meets a rank of another size names both;
  # the other names the rank it waits for in vain.
  STORE=c TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init 0 3)" >"$work/ws0" 2>&1 &
  STORE=c TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init 1 2)" >"$work/ws1" 2>&1
  rc1=$?
  wait $!
  rc0=$?
  [ $rc0 -eq 3 ] && [ $rc1 -eq 3 ] || fail "world sizes 3 and 2: exits $rc0 and $rc1: $(cat "$work/ws0" "$work/ws1")"
  grep -qF "rank 0 was started with world_size 3 but rank 1 with 2: every rank must be given the same world_size" "$work/ws1" ||
    fail "the disagreement is not named: $(cat "$work/ws1")"
  grep -qF "rank 0 of 3: rank 2 never joined the store bootstrap" "$work/ws0" || fail "rank 2 not named: $(cat "$work/ws0")"
  echo "ok: world sizes that disagree are named on each rank"
  # UCX_TLS naming no transport UCX has: UCX's reason and ringdp's error, no hang.
  out=$(UCX_TLS=nosuch STORE=d TIMEOUT=10 timeout 60 /usr/bin/python3 "$here/../../docs/examples/spawn_allreduce.py" --ranks 2 2>&1)
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "UCX_TLS=nosuch: exit $rc: $out"
  grep -qF "no usable transports/devices" <<<"$out" && grep -qF "UCX: ucp_init failed" <<<"$out" ||
    fail "UCX_TLS=nosuch: no reason given: $out"
  echo "ok: UCX_TLS that leaves no transport fails at once, with UCX's reason"
  # One rank fails after the ranks have met (UCX cannot start on rank 1 alone): rank 0 raises
  # rank 1's error at once, not after the 60 s timeout.
  began=$(date +%s)
  STORE=e TIMEOUT=60 timeout 90 /usr/bin/python3 -c "$(init 0 2)" >"$work/f0" 2>&1 &
  UCX_TLS=nosuch STORE=e TIMEOUT=60 timeout 90 /usr/bin/python3 -c "$(init 1 2)" >"$work/f1" 2>&1
  wait $!
  rc0=$? took=$(($(date +%s) - began))
  [ $rc0 -eq 3 ] || fail "rank 1 failed: rank 0's exit $rc0: $(cat "$work/f0")"
  grep -qF "rank 0 of 2: rank 1 could not join (ringdp#1): UCX: ucp_init failed" "$work/f0" ||
    fail "rank 1's failure not named on rank 0: $(cat "$work/f0")"
  [ $took -lt 30 ] || fail "rank 1's failure reached rank 0 after $took s (timeout 60 s)"
  echo "ok: a rank that fails while the ranks meet is named by the others at once ($took s)"
  # The shared-memory all-reduce without MPI: slots in a segment of the job's own
  # (comm/transport/shm/shm_segment.h), gone from /dev/shm once every rank has mapped it; one too
  # large for /dev/shm is refused on every rank, naming it.
  before=$(ls /dev/shm | grep -c '^ringdp-')
  out=$(RINGDP_TRACE=1 timeout 60 /usr/bin/python3 "$here/../../docs/examples/spawn_allreduce.py" --ranks 3 2>&1)
  rc=$?
  [ $rc -eq 0 ] && grep -qF "ringdp 3.0, gloo 3.0" <<<"$out" || fail "shared memory without MPI: exit $rc: $out"
  grep -qE "rank [0-2] all_reduce #0 shared_memory step 1/1" <<<"$out" || fail "the all-reduce did not use the slots: $out"
  [ "$(ls /dev/shm | grep -c '^ringdp-')" -eq "$before" ] || fail "a segment was left in /dev/shm: $(ls /dev/shm)"
  out=$(RINGDP_SHM_SLOT_BYTES=1099511627776 timeout 60 /usr/bin/python3 "$here/../../docs/examples/spawn_allreduce.py" --ranks 2 2>&1)
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "slots larger than /dev/shm: exit $rc: $out"
  grep -qE "rank [01]: /dev/shm has .* free, but ringdp's shared-memory slots .* need about" <<<"$out" ||
    fail "slots larger than /dev/shm: /dev/shm not named: $out"
  [ "$(ls /dev/shm | grep -c '^ringdp-')" -eq "$before" ] || fail "a refused segment was left in /dev/shm"
  echo "ok: without MPI the all-reduce uses shared-memory slots, leaves nothing in /dev/shm, and names a /dev/shm too small"
fi
out=$(STORE=b timeout 60 /usr/bin/python3 -c "$(init 0 1)" 2>&1)
[ $? -eq 0 ] && grep -qF "initialised rank 0 of 1" <<<"$out" || fail "a world of one without a launcher: $out"
echo "ok: a world of one needs no launcher"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi_rank='int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK")))'
out=$(STORE=c timeout 60 "$mpiexec" -n 2 /usr/bin/python3 -c "$(init "1 - $mpi_rank" 2)" 2>&1)
# Each rank's line is one write, but MPICH's launcher may still put the other's between it and its
# newline ("initialised rank 0 of 2initialised rank 1 of 2").
[ "$(grep -oE 'initialised rank [01] of 2' <<<"$out" | sort -u | wc -l)" -eq 2 ] ||
  fail "ranks in reverse MPI order: $out"
echo "ok: ranks in reverse MPI order are taken"
