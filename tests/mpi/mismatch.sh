#!/usr/bin/env bash
# Ranks that disagree on a collective's count, op or algorithm, launched as one MPMD job, with no
# debug mode: each case must end at once with ringdp's error (exit 1) naming what differs, never
# with memory corrupted (Open MPI 4.1's single-copy path wrote a longer message past the receive
# buffer: "double free or corruption", exit 134, or SIGSEGV, 139), never with wrong results
# reported as a pass (-o sum against -o max did, issue #33), and never by the watchdog (the
# timeout is set far above the limit each case gets). Run in the mpi suite, so the sanitizer pass
# runs it under ASan too.
#   tests/mpi/mismatch.sh MPIEXEC BENCH [LAUNCH ARGS...]
set -u
mpiexec=$1 bench=$2
shift 2
launch=("$@")
export RINGDP_TIMEOUT=300
fail() { echo "FAIL: $*" >&2; exit 1; }
sizes='expected [0-9]+ bytes of all_reduce #[0-9]+ \(float32, sum, [a-z_]+\) from rank [01] and (rank [01] is sending [0-9]+ \(stopped before any of it moved\)|got)'
calls='is in all_reduce #[0-9]+ \(float32, [a-z]+, [a-z_]+\) but rank [01] (sent it a message of|published a part of|is in) all_reduce #[0-9]+ \(float32, [a-z]+, [a-z_]+\)'
# rank 0's flags | rank 1's flags | what the report must match
cases=(
  "--algo recursive_doubling -b 1M|--algo recursive_doubling -b 2M|$sizes"
  "--algo rabenseifner -b 1M|--algo rabenseifner -b 2M|$sizes"
  "--algo ring -b 64K|--algo ring -b 128K|$sizes"
  "--algo ring -b 2K|--algo ring -b 512|$sizes"
  "--algo ring -b 64K|--algo recursive_doubling -b 64K|$calls"
  "--algo rabenseifner -b 64K|--algo ring -b 64K|$calls"
  "--algo ring -b 64K|--algo shared_memory -b 64K|$calls"
  "--algo ring -b 64K|--algo native -b 64K|$calls"
  "--algo shared_memory -b 4K|--algo native -b 4K|$calls"
  "--algo recursive_doubling -b 64|--algo native -b 64|$calls"
  "-b 1M|-b 512K|($sizes|$calls)"
  "--algo ring -o sum -b 64|--algo ring -o max -b 64|$calls"
  "--algo ring -o sum -b 64K|--algo ring -o max -b 64K|$calls"
  "--algo shared_memory -o sum -b 1K|--algo shared_memory -o max -b 1K|$calls"
  "--algo recursive_doubling -o sum -b 1K|--algo recursive_doubling -o avg -b 1K|$calls"
)
for c in "${cases[@]}"; do
  IFS='|' read -r f1 f2 want <<<"$c"
  start=$SECONDS
  # shellcheck disable=SC2086  # the flags split on purpose
  out=$(timeout 60 "$mpiexec" "${launch[@]}" -n 1 "$bench" all_reduce $f1 -n 3 -w 0 : \
    -n 1 "$bench" all_reduce $f2 -n 3 -w 0 2>&1)
  rc=$?
  [ $rc -ne 124 ] || fail "$f1 against $f2: hung"
  grep -qE "AddressSanitizer|double free|corruption|Segmentation|signal" <<<"$out" && fail "$f1 against $f2: memory corrupted: $out"
  [ $rc -eq 1 ] || fail "$f1 against $f2: exit $rc, expected 1 (ringdp's error): $out"
  grep -qE "$want" <<<"$out" || fail "$f1 against $f2: no report naming what differs: $out"
  [ $((SECONDS - start)) -le 30 ] || fail "$f1 against $f2: took $((SECONDS - start)) s: found by a watchdog, not the check"
  echo "ok: $f1 against $f2 ($((SECONDS - start)) s): $(grep -m1 -oE "$want" <<<"$out")"
done
