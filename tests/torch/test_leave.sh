#!/usr/bin/env bash
# A rank that leaves a PyTorch job on the ringdp backend (an uncaught exception, sys.exit(0) or
# (1), Ctrl-C, or the others leaving while it runs one collective more, or raising or exiting 1
# while the others wait in a gloo group) ends the job within
# seconds, with a non-zero status, and each rank that waited for it gets a RuntimeError it can
# catch, naming the rank that left and why (issue #47, docs/errors.md). Before, each case waited
# out torch's 30-minute timeout. A job where every rank finishes still exits 0.
# MPIEXEC "plain": the ranks are started without MPI by a launcher that ends none of them
# (tests/torch/jobs.sh's plain_launch, as a framework's own may), so ringdp alone ends the job: its
# notices travel over UCX, and a rank killed outright (SIGKILL) is seen by its peers to end.
#   tests/torch/test_leave.sh MPIEXEC BUILD_DIR NP
set -uo pipefail
mpiexec=$1 build=$2 np=$3
script="$(cd "$(dirname "$0")" && pwd)/leave.py"
source "$(dirname "$0")/jobs.sh"
limit=40  # seconds: torch start-up on 2 busy cores is most of it
# caught_by_others WHY: every rank but 1 caught a RuntimeError naming a rank that left, rank 0
# naming rank 1 and WHY (another may first hear of a rank that left because rank 1 did)
caught_by_others() {
  local r
  for ((r = 0; r < np; r++)); do
    [ $r -eq 1 ] && continue
    grep -qE "rank $r caught: ringdp: allreduce: all_reduce #1 .*rank [0-9]+ left \(.*\) after finishing 1 collective on this communicator" <<<"$out" ||
      fail "rank $r did not catch an error naming a rank that left: $out"
  done
  grep -qE "rank 0 caught: ringdp: allreduce: all_reduce #1 .*rank 1 left \($1\) after finishing 1 collective on this communicator" <<<"$out" ||
    fail "rank 0 did not catch an error naming rank 1 ($1): $out"
}

for mode in raise group exit0 exit1 sigint; do
  job $mode $limit
  [ $rc -ne 0 ] || fail "$mode: the job ended with exit 0: $out"
  case $mode in
    raise | group) caught_by_others "its Python process is exiting after an uncaught ValueError: bad sample 17" ;;
    sigint) caught_by_others "its Python process is exiting after an uncaught KeyboardInterrupt" ;;
    *) caught_by_others "its Python process is exiting" ;;
  esac
  # Told at once: no communicator's leaving waits for its peers before another's notice is sent.
  if [ $mode = group ]; then
    for ((r = 0; r < np; r++)); do
      [ $r -eq 1 ] || grep -qE "rank $r waited [0-7]\.[0-9] s" <<<"$out" || fail "group: rank $r was not told within 8 s: $out"
    done
  fi
  echo "ok: rank 1 leaving ($mode) ends the job in ${seconds}s, exit $rc, the others catch its reason"
done

if [ "$mpiexec" = plain ]; then
  job kill $limit
  [ $rc -ne 0 ] || fail "kill: the job ended with exit 0: $out"
  for ((r = 0; r < np; r++)); do
    [ $r -eq 1 ] || grep -qE "rank $r caught: ringdp: allreduce: all_reduce #1 .*rank 1 \(process [0-9]+ on [^)]*\) ended without leaving the job \(killed by a signal" <<<"$out" ||
      fail "kill: rank $r caught no error naming rank 1's end: $out"
  done
  echo "ok: rank 1 killed (SIGKILL) ends the job in ${seconds}s, exit $rc, the others name it"
fi

job extra $limit
[ $rc -ne 0 ] || fail "extra: the job ended with exit 0: $out"
grep -qE "rank 0 caught: ringdp: allreduce: all_reduce #2 .*rank [1-9] left \(its Python process is exiting\) after finishing 2 collectives" <<<"$out" ||
  fail "extra: rank 0's third all_reduce did not fail naming a rank that left: $out"
echo "ok: a rank left alone in one collective more fails in ${seconds}s, naming who left"

# A count that differs on a group (no shared memory there) is found by one rank; the others raise
# within seconds, told by it, instead of after torch's 30 minutes; destroying the group is then
# safe, and the job, which goes on on the default group, ends 0 (issue #47 item 4).
job mismatch $limit
[ $rc -eq 0 ] || fail "mismatch: the job exited $rc: $out"
for ((r = 0; r < np; r++)); do
  grep -qE "rank $r caught after [0-4]\.[0-9] s: ringdp: allreduce: " <<<"$out" ||
    fail "mismatch: rank $r did not raise within 5 s: $out"
done
grep -q "failed in this collective" <<<"$out" || fail "mismatch: no rank was told by the one that found it: $out"
# Each names the shape it passed (issue #47 item 8; before: bytes of a chunk on the rank that found it).
for ((r = 0; r < np; r++)); do
  want="1000 x float32 [10, 100]"
  [ $r -eq 1 ] && want="1010 x float32 [10, 101]"
  grep -E "rank $r caught after" <<<"$out" | grep -qF "$want" || fail "mismatch: rank $r does not name its $want: $out"
done
echo "ok: a count that differs on a group raises on every rank (${seconds}s in all), and the job ends 0"

job timeout $limit
[ $rc -ne 0 ] || fail "timeout: the job ended with exit 0: $out"
# Each other rank's wait ends at its own deadline, or earlier when another, timed out first, left.
for ((r = 0; r < np; r++)); do
  [ $r -eq 1 ] && continue
  grep -qE "rank $r caught: ringdp: allreduce: (rank $r: all_reduce #1 \(.*waiting for rank 1\) exceeded 3 s|all_reduce #1 .*: rank [02] (left \(its Python process is exiting after an uncaught RuntimeError: |failed in this collective \(rank [02]: all_reduce #1 .* exceeded 3 s))" <<<"$out" ||
    fail "timeout: rank $r did not catch the watchdog's report, or its peer's leaving on it: $out"
  grep -qE "rank $r caught: ringdp: allreduce: all_reduce on rank $r: this communicator is broken: .*; it runs no more calls" <<<"$out" ||
    fail "timeout: rank $r's next call did not say the group is broken: $out"
done
# Rank 1, late, finds the others gone (they finished 1 collective) and learns why.
grep -qE "rank 1 caught: ringdp: allreduce: all_reduce #[12] .*rank [02] (left \(its Python process is exiting after an uncaught RuntimeError: .*\) after finishing 1 collective|failed in this collective \(rank [02]: all_reduce #1 .* exceeded 3 s)" <<<"$out" ||
  fail "timeout: rank 1, late, did not learn that the others failed and why: $out"
# A rank that fails frees its shared memory alone, not waiting for the others without bound (they
# may be blocked elsewhere: gloo, below); under MPI it gives them a grace period (RINGDP_EXIT_GRACE)
# at its exit instead.
! grep -qE "ringdp: rank [0-9]+: has left the job and waits for" <<<"$out" ||
  fail "timeout: a rank that failed waited for the others to leave: $out"
echo "ok: a timeout raises the watchdog's report (${seconds}s in all), the group is broken after it"

# A rank that raises, or catches and calls sys.exit(1), while its peers wait in a gloo group beside
# ringdp's: before, its exit hook waited for them to leave ringdp's job, and gloo waited for its
# process to end (torch's 30 minutes; sys.exit(1) still did until 2026-12-07). Under an MPI
# launcher, with PyTorch 2.x (whose gloo group lives until the process ends), MPI_Finalize then
# waits for them too: a rank that exits non-zero gives up after a grace period (RINGDP_EXIT_GRACE:
# 2 s for `gloo`, the default 10 s for `gloo-exit1`), says so, and exits without it.
major=$("$python" -c 'import torch; print(torch.__version__.split(".")[0])')
for mode in gloo gloo-exit1; do
  grace=10  # the default
  if [ $mode = gloo ]; then
    grace=2
    RINGDP_EXIT_GRACE=$grace job $mode $limit
  else
    job $mode $limit
  fi
  [ $rc -ne 0 ] || fail "$mode: the job ended with exit 0: $out"
  grep -q "bad sample 17" <<<"$out" || fail "$mode: rank 1 did not fail: $out"
  gave_up="ringdp: rank 1 (process [0-9]*): exits with status 1 without MPI_Finalize: not every rank reached its exit within $grace s"
  if [ "$mpiexec" != plain ] && [ "$major" -ge 2 ]; then
    grep -q "$gave_up" <<<"$out" || fail "$mode: rank 1 did not say it gave up on the others after $grace s: $out"
  fi
  echo "ok: a rank failing ($mode) while the others wait in a gloo group ends the job in ${seconds}s, exit $rc"
done
if [ "$mpiexec" != plain ]; then
  RINGDP_EXIT_GRACE=soon job finish $limit
  [ $rc -ne 0 ] || fail "RINGDP_EXIT_GRACE=soon: the job exited 0: $out"
  grep -q "RINGDP_EXIT_GRACE='soon': expected a number of seconds from 0 to 100000000" <<<"$out" ||
    fail "RINGDP_EXIT_GRACE=soon: no error naming it: $out"
  echo "ok: a bad RINGDP_EXIT_GRACE ends the job at start-up, named (${seconds}s)"
fi

job finish $limit
[ $rc -eq 0 ] || fail "finish: a job where every rank finished exited $rc: $out"
[ "$(grep -o ': done' <<<"$out" | wc -l)" -eq "$np" ] || fail "finish: not every rank finished: $out"
echo "ok: a job where every rank finishes exits 0 in ${seconds}s"

# A rank that finished waits at exit for a late peer as MPI_Finalize would, and once that outlasts
# the group's timeout (3 s) it says so (the line a communicator's teardown printed before exits
# moved to MPI's exit hook); the late rank, 10 s late (a margin for a slow exit), says nothing.
if [ "$mpiexec" != plain ]; then
  job late $limit
  [ $rc -eq 0 ] || fail "late: a job where every rank finished exited $rc: $out"
  for ((r = 0; r < np; r++)); do
    said=$(grep -c "ringdp: rank $r (process [0-9]*): has finished and waits at exit for every other rank .* (longer than the collective timeout, 3 s, already)" <<<"$out")
    [ "$said" -eq $((r == 1 ? 0 : 1)) ] || fail "late: rank $r said $said times that it waits at exit: $out"
  done
  echo "ok: ranks that finished wait at exit for a late one, and say so past the collective timeout (${seconds}s)"
fi
