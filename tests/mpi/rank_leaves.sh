#!/usr/bin/env bash
# A rank of a C++ program on ringdp that leaves (returns from main while its peers wait in a
# collective, or leaves them one collective short) ends the job within seconds, non-zero, and the
# ranks that waited print why, naming the rank that left (issue #47). A job where every rank
# finishes exits 0. Before, each failing case waited for the collective timeout.
#   tests/mpi/rank_leaves.sh MPIEXEC PROGRAM NP [LAUNCHER ARGS...]
set -uo pipefail
mpiexec=$1 program=$2 np=$3
shift 3
fail() { echo "FAIL: $*"; exit 1; }
limit=20  # seconds
job() {  # job MODE: sets $out, $rc and $seconds
  local start=$SECONDS
  out=$(timeout 100 "$mpiexec" "$@" -n "$np" "$program" "$mode" 2>&1)
  rc=$? seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "$mode on $np ranks hung: $out"
  [ $seconds -le $limit ] || fail "$mode on $np ranks took $seconds s to end (limit $limit s): $out"
  # tests/mpi/finalize_rule.cpp: no rank reached MPI_Finalize with a departure notice in flight.
  ! grep -q "error: MPI_Finalize with" <<<"$out" || fail "$mode on $np ranks: $(grep "MPI_Finalize with" <<<"$out")"
}

# Every other rank names rank 1, also one that hears first from a rank that left because rank 1
# did: a notice carries whom its sender blamed. RINGDP_TEST_NOTICE_DELAY holds rank 1's notice to
# the last rank back 1.5 s, so that rank 0's comes first there (before, that rank named rank 0).
for delay in "" "1:$((np - 1)):1500"; do
  if [ -n "$delay" ]; then mode=return RINGDP_TEST_NOTICE_DELAY=$delay job "$@"; else mode=return job "$@"; fi
  [ $rc -ne 0 ] || fail "return: the job ended with exit 0: $out"
  for ((r = 0; r < np; r++)); do
    [ $r -eq 1 ] && continue
    grep -qE "rank $r: error after [0-9.]+ s: all_reduce #1 .*rank 1 left \(its communicator was destroyed\) after finishing 1 collective on this communicator, while rank $r waited for it" <<<"$out" ||
      fail "return${delay:+ (notice delay $delay)}: rank $r printed no error naming rank 1: $out"
  done
  echo "ok: rank 1 returning from main ends the job in ${seconds}s, exit $rc; the others name it${delay:+ (its notice to rank $((np - 1)) held back 1.5 s)}"
done

mode=extra job "$@"
[ $rc -ne 0 ] || fail "extra: the job ended with exit 0: $out"
grep -qE "rank 0: error after [0-9.]+ s: all_reduce #2 .*rank [1-9] left \(its communicator was destroyed\) after finishing 2 collectives" <<<"$out" ||
  fail "extra: rank 0's third all-reduce did not fail naming a rank that left: $out"
echo "ok: a rank left alone in one collective more fails in ${seconds}s, naming who left"

mode=mismatch job "$@"
[ $rc -ne 0 ] || fail "mismatch: the job ended with exit 0: $out"
# Every rank fails within 3 s, while the one that found it lives on (before, the others waited
# until it left, 4 s later, or for the timeout); a later call fails at once naming the first error.
# Where every rank refused it alike (shared memory), the ranks are in step and the next call runs.
then="then: all_reduce on rank R: this communicator is broken: "
grep -q "then: an all-reduce ran" <<<"$out" && then="then: an all-reduce ran"
for ((r = 0; r < np; r++)); do
  grep -qE "rank $r: error after [0-2]\.[0-9] s: " <<<"$out" || fail "mismatch: rank $r did not fail within 3 s: $out"
  grep -qF "rank $r: ${then//R/$r}" <<<"$out" || fail "mismatch: rank $r's next call: not '$then' as another's: $out"
done
if [ "$then" = "then: an all-reduce ran" ]; then
  # A refusal every rank made alike is no failure: the leavers report every collective they ran.
  grep -qE "rank 0: then: all_reduce #3 .*rank [12] left \(its communicator was destroyed\) after finishing 3 collectives" <<<"$out" ||
    fail "mismatch: rank 0's extra call did not hear that its peers finished 3 collectives: $out"
else
  ! grep -q " left (" <<<"$out" || fail "mismatch: a rank learnt of it only when its peer left: $out"
fi
# Each rank's error names the count it passed (issue #47 item 8; before, the rank that found it
# named bytes of a chunk or slot only): rank 1's 1001, every other rank's 1000.
for ((r = 0; r < np; r++)); do
  want=1000
  [ $r -eq 1 ] && want=1001
  grep -E "rank $r: error after" <<<"$out" | grep -qF "$want x float32" ||
    fail "mismatch: rank $r's error does not name the $want x float32 it passed: $out"
done
echo "ok: a count that differs on rank 1 fails every rank in ${seconds}s; next call: ${then#then: }"

mode=finish job "$@"
[ $rc -eq 0 ] || fail "finish: a job where every rank finished exited $rc: $out"
echo "ok: a job where every rank finishes exits 0 in ${seconds}s"

# A rank that is only slow to leave is waited for, however long: with shared memory (this script's
# runs without RINGDP_SHM_MAX_BYTES=0) the others say so once their wait outlasts the timeout.
mode=late RINGDP_TIMEOUT_MS=2000 job "$@"
[ $rc -eq 0 ] || fail "late: a job where every rank finished, one late, exited $rc: $out"
if [ -z "${RINGDP_SHM_MAX_BYTES:-}" ]; then
  for ((r = 0; r < np; r++)); do
    [ $r -eq 1 ] && continue
    # Another prompt rank's notice may still be on its way (a loaded machine): it may be named too.
    grep -qE "ringdp: rank $r: has left the job and waits for rank\(s\) ([0-9]+, )*1(, [0-9]+)* to leave too before freeing the shared memory \(longer than the collective timeout already\)" <<<"$out" ||
      fail "late: rank $r did not say it waits for rank 1: $out"
  done
fi
echo "ok: a rank 3.5 s late to leave is waited for (a 2 s timeout), the others saying so; exit 0 in ${seconds}s"
