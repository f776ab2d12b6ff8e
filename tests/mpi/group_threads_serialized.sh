#!/usr/bin/env bash
# tests/mpi/test_group_threads.cpp under RINGDP_MPI_THREAD=serialized, where one call queue serves
# every communicator of a process: the ranks start their four groups' threads in opposite orders,
# so each rank runs one group's all-reduce while its peer waits in another's, and the job
# deadlocks (issue #47 item 7). The watchdog must end it within seconds of its timeout, and its
# report must name the stuck group and each group whose call waits behind it. Any sequence
# number: under load a rank's threads may start late enough for a group to finish calls first.
#   tests/mpi/group_threads_serialized.sh MPIEXEC TEST_BINARY [LAUNCH ARGS...]
set -u
mpiexec=$1 exe=$2
shift 2
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$SECONDS
out=$(RINGDP_MPI_THREAD=serialized RINGDP_TIMEOUT=3 timeout 60 "$mpiexec" "$@" -n 2 "$exe" 2>&1)
rc=$? took=$((SECONDS - start))
echo "$out" | grep "ringdp:" | head -4
[ "$rc" -ne 0 ] || fail "the job ended with 0: it did not deadlock, so nothing was checked"
[ "$rc" -ne 124 ] || fail "the job hung past 60 s: the watchdog did not end it"
[ "$took" -le 30 ] || fail "the job took $took s to end"
report=$(grep -m1 -E "ringdp: rank [01]: all_reduce #[0-9]+ \(.*\) on group #[1-4] of world ranks 0, 1 exceeded 3 s" <<<"$out") ||
  fail "no watchdog report naming the stuck group: $out"
stuck=$(sed -nE 's/.* on group #([1-4]) of world ranks 0, 1 exceeded.*/\1/p' <<<"$report")
for g in 1 2 3 4; do
  [ "$g" = "$stuck" ] && continue
  grep -qE "waiting behind it on this rank .*: .*all_reduce #[0-9]+ on group #$g of world ranks 0, 1" <<<"$report" ||
    fail "the report does not name group #$g waiting behind group #$stuck: $report"
done
echo "ok: the watchdog named group #$stuck and the three waiting behind it, $took s"
