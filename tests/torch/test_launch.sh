#!/usr/bin/env bash
# How the ringdp backend is launched (docs/torch.md): without an MPI launcher a job of several ranks
# meets through torch's store (torchrun and mp.spawn: tests/torch/spawn.py and the torch2 suite run
# whole jobs so), and a rank that never arrives is named when torch's timeout passes, never waited
# for; under one, ranks in another order than MPI's are taken (as gloo;
# tests/torch/test_permuted.sh checks the results and refuses what is not a permutation); a world
# of one needs no launcher.
#   tests/torch/test_launch.sh MPIEXEC BUILD_DIR [mpi-only]
# mpi-only (the MPICH pass): not the jobs without a launcher, which run no MPI (CI's time,
# docs/errors.md); Open MPI's pass runs them.
set -uo pipefail
mpiexec=$1 build=$2 only=${3:-}
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
# One write (launchers interleave writes), flushed: a job's output may be a file read while it runs.
print(f"initialised rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)
PY
}
# pair NAME "RANK SIZE" "RANK SIZE": two processes on store NAME with a 3 s timeout, the first in
# the background; their output in $work/NAME0 and NAME1, their exits in rc0 and rc1.
pair() {
  local ra sa rb sb
  read -r ra sa <<<"$2"
  read -r rb sb <<<"$3"
  STORE=$1 TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init "$ra" "$sa")" >"$work/${1}0" 2>&1 &
  STORE=$1 TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init "$rb" "$sb")" >"$work/${1}1" 2>&1
  rc1=$?
  wait $!
  rc0=$?
}
if [ "$only" = mpi-only ]; then
  echo "ok: (jobs without a launcher left to the Open MPI build's run: no MPI runs in them)"
elif ! grep -q "define RINGDP_HAVE_UCX 1" "$build/config.h"; then
  echo "ok: (skipped: built without UCX, a job without an MPI launcher cannot start)"
else
  began=$(date +%s)
  out=$(STORE=a TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$(init 0 2)" 2>&1)
  rc=$? took=$(($(date +%s) - began))
  [ $rc -eq 3 ] || fail "rank 1 of 2 never started: exit $rc, expected the RuntimeError: $out"
  grep -qF "rank 0 of 2: rank 1 never joined the store bootstrap (ringdp/2#1) within 3 s" <<<"$out" ||
    fail "the missing rank is not named: $out"
  [ $took -lt 30 ] || fail "the missing rank was named after $took s, with a timeout of 3 s"
  echo "ok: without a launcher, a rank that never arrives is named after torch's timeout (3 s; took $took s)"
  # Two ranks given different world sizes: they count their arrivals apart and never meet; each
  # names the other's size once its wait ends.
  pair c "0 3" "1 2"
  [ $rc0 -eq 3 ] && [ $rc1 -eq 3 ] || fail "world sizes 3 and 2: exits $rc0 and $rc1: $(cat "$work/c0" "$work/c1")"
  grep -qF "rank 0 last joined this store with world_size 3 but rank 1 with 2: every rank must be given the same world_size" "$work/c1" ||
    fail "the disagreement is not named: $(cat "$work/c1")"
  grep -qF "rank 1 last joined this store with world_size 2 but rank 0 with 3: every rank must be given the same world_size" "$work/c0" ||
    fail "the disagreement is not named on rank 0: $(cat "$work/c0")"
  echo "ok: world sizes that disagree are named on each rank"
  # Two processes with one rank on one store (two jobs' rank 0, or a rank given twice): the second
  # is refused at once, naming the store's sharing; the first names the rank that never came.
  pair g "0 2" "0 2"
  [ $rc0 -eq 3 ] && [ $rc1 -eq 3 ] || fail "two rank 0s on one store: exits $rc0 and $rc1: $(cat "$work/g0" "$work/g1")"
  grep -qF "another process already joined the store bootstrap (ringdp/2#1) as rank 0: two jobs share this store" \
    "$work/g0" "$work/g1" || fail "the second rank 0 is not refused by name: $(cat "$work/g0" "$work/g1")"
  grep -qF "rank 0 of 2: rank 1 never joined the store bootstrap (ringdp/2#1)" "$work/g0" "$work/g1" ||
    fail "the first rank 0 does not name rank 1: $(cat "$work/g0" "$work/g1")"
  echo "ok: a second process given rank 0 on one store is refused at once, naming the shared store"
  # A second job on a running job's MASTER_PORT: its rank 0 cannot serve the store (torch's error),
  # its rank 1 meets the first job's store and is named within its timeout; the first job goes on.
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env_init() { init "int(os.environ['RANK'])" 2 | sed 's|init_method="file://.*" + os.environ.get("STORE", "")|init_method="env://"|'; }
  { env_init; cat <<PY; } >"$work/job_a.py"
import time, torch
while not os.path.exists("$work/b-done"): time.sleep(0.1)
t = torch.ones(4) * (rank + 1)
dist.all_reduce(t)
print(f"job A rank {rank}: {t.tolist()}")
PY
  export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
  for r in 0 1; do RANK=$r timeout 120 /usr/bin/python3 "$work/job_a.py" >"$work/a$r" 2>&1 & done
  for _ in $(seq 600); do [ "$(cat "$work/a0" "$work/a1" 2>/dev/null | grep -c initialised)" -eq 2 ] && break; sleep 0.1; done
  if [ "$(cat "$work/a0" "$work/a1" | grep -c initialised)" -ne 2 ]; then
    touch "$work/b-done"
    fail "the first job did not start: $(cat "$work/a0" "$work/a1")"
  fi
  job_b=$(env_init)
  RANK=0 TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$job_b" >"$work/b0" 2>&1 &
  RANK=1 TIMEOUT=3 timeout 60 /usr/bin/python3 -c "$job_b" >"$work/b1" 2>&1
  rcb1=$?
  wait $!
  rcb0=$?
  touch "$work/b-done"
  wait
  unset MASTER_ADDR MASTER_PORT
  [ $rcb0 -eq 3 ] && [ $rcb1 -eq 3 ] ||
    fail "a second job on one MASTER_PORT: exits $rcb0 and $rcb1: $(cat "$work/b0" "$work/b1")"
  grep -qF "rank 1 of 2: rank 0 never joined the store bootstrap (ringdp/2#2)" "$work/b1" &&
    grep -qF "or another job on the same store (the same MASTER_ADDR:MASTER_PORT" "$work/b1" ||
    fail "the second job's rank 1 does not name the shared store: $(cat "$work/b1")"
  grep -qF "job A rank 0: [3.0, 3.0, 3.0, 3.0]" "$work/a0" && grep -qF "job A rank 1: [3.0, 3.0, 3.0, 3.0]" "$work/a1" ||
    fail "the first job did not go on: $(cat "$work/a0" "$work/a1")"
  echo "ok: a second job on a running job's MASTER_PORT fails within its timeout, naming the shared store; the first goes on"
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
  grep -qF "rank 0 of 2: rank 1 could not join (ringdp/2#1): UCX: ucp_init failed" "$work/f0" ||
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
