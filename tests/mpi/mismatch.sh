#!/usr/bin/env bash
# Ranks that disagree on a collective's count or algorithm, launched as one MPMD job: each case must
# end with ringdp's error (exit 1) naming both sizes, never with memory corrupted (Open MPI 4.1's
# single-copy path wrote a longer message past the receive buffer: "double free or corruption",
# exit 134, or SIGSEGV, 139). Run in the mpi suite, so the sanitizer pass runs it under ASan too.
#   tests/mpi/mismatch.sh MPIEXEC BENCH [LAUNCH ARGS...]
set -u
mpiexec=$1 bench=$2
shift 2
launch=("$@")
fail() { echo "FAIL: $*" >&2; exit 1; }
cases=(
  "recursive_doubling 1M recursive_doubling 2M"
  "rabenseifner 1M rabenseifner 2M"
  "ring 64K recursive_doubling 64K"
  "ring 64K ring 128K"
  "ring 2K ring 512"
)
for c in "${cases[@]}"; do
  read -r a1 s1 a2 s2 <<<"$c"
  out=$(timeout 60 "$mpiexec" "${launch[@]}" -n 1 "$bench" all_reduce -b "$s1" -e "$s1" -n 3 -w 0 --algo "$a1" : \
    -n 1 "$bench" all_reduce -b "$s2" -e "$s2" -n 3 -w 0 --algo "$a2" 2>&1)
  rc=$?
  [ $rc -ne 124 ] || fail "$c: hung"
  grep -qE "AddressSanitizer|double free|corruption|Segmentation|signal" <<<"$out" && fail "$c: memory corrupted: $out"
  [ $rc -eq 1 ] || fail "$c: exit $rc, expected 1 (ringdp's error): $out"
  grep -qE "expected [0-9]+ bytes of all_reduce #[0-9]+ \(float32\) from rank [01] and (rank [01] is sending [0-9]+ \(stopped before any of it moved\)|got)" <<<"$out" ||
    fail "$c: no report naming the sizes: $out"
  echo "ok: $a1 $s1 against $a2 $s2: $(grep -m1 -oE 'expected [0-9]+ bytes.*(moved\)|got[^:]*)' <<<"$out")"
done
