#!/usr/bin/env bash
# ringdp-bench as a user runs it, and the diagnostics RINGDP_FAULT rehearses:
#   tests/cli/bench.sh CASE BUILD_DIR
case_name=$1
build=$(cd "$2" && pwd)
bench="$build/apps/bench/ringdp-bench"
source "$(dirname "$0")/common.sh"
run() { run_app "$bench" 120 "$@"; }  # run NP ARGS...
expect() {  # expect CODE SUBSTRING
  [ "$rc" -eq "$1" ] || fail "exit $rc, expected $1; output: $out"
  grep -qF -- "$2" <<<"$out" || fail "no '$2' in: $out"
}

case "$case_name" in
  table)
    run 3 all -b 8 -e 4K -f 8 -d all -o all --algo all -n 2 -w 1 --csv "$work/out.csv" --json "$work/out.json"
    expect 0 "# Out of bounds values : 0 OK"
    grep -qE '^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong' <<<"$out" || fail "no nccl-tests header: $out"
    grep -qF "# Avg bus bandwidth" <<<"$out" || fail "no average bus bandwidth line"
    grep -qF "ratio of native" <<<"$out" || fail "no comparison with native"
    grep -qF "alpha(us)" <<<"$out" || fail "no alpha-beta summary"
    grep -qF "# avg is skipped for int64, int32, int8, uint8, bool: it is defined for floating-point types only" <<<"$out" ||
      fail "-d all -o all does not say that avg is skipped for the integer types"
    for c in all_reduce reduce broadcast all_gather reduce_scatter barrier gather scatter alltoall; do
      grep -q "^$c," "$work/out.csv" || fail "CSV has no $c rows"
    done
    grep -q "^alltoall,pairwise," "$work/out.csv" || fail "alltoall's own algorithm is not reported as pairwise"
    # Every row of the three added collectives checked clean in and out of place, by each algorithm.
    python3 -c "import json,sys; rows=[r for r in json.load(open('$work/out.json')) if r['collective'] in ('gather','scatter','alltoall')]; sys.exit(0 if len(rows) >= 3 * 2 * 9 and all(r[k]['wrong']==0 for r in rows for k in ('out_of_place','in_place')) else 1)" ||
      fail "gather, scatter or alltoall rows missing or wrong in the JSON"
    python3 -c "import json,sys; rows=json.load(open('$work/out.json')); sys.exit(0 if rows and all(r['out_of_place']['wrong']==0 for r in rows) else 1)" ||
      fail "JSON rows missing or wrong"
    # A row asking for an algorithm by name ran that one (native included).
    python3 -c "import json,sys; bad=[(r['collective'],r['algorithm'],r['ran']) for r in json.load(open('$work/out.json')) if r['algorithm']!='auto' and r['ran']!=r['algorithm']]; bad and print(bad[:5]); sys.exit(1 if bad else 0)" ||
      fail "a named algorithm's row says another ran"
    echo "ok: every collective, dtype, op and algorithm on 3 ranks checks clean; CSV and JSON written"
    ;;
  full-disk)
    # A write that fails is an error with the OS's reason and a non-zero exit, and the files of the
    # last run stay whole (#33: exit 0 with the CSV cut at 4096 bytes and the JSON empty).
    printf 'previous\n' >"$work/out.csv"
    printf '["previous"]\n' >"$work/out.json"
    args=(all -b 8 -e 64K -f 2 --algo all -n 1 -w 0)
    run_app_limited 8 "$bench" 120 2 "${args[@]}" --csv "$work/out.csv"
    expect 1 "cannot write --csv '$work/out.csv': File too large"
    run_app_limited 8 "$bench" 120 2 "${args[@]}" --json "$work/out.json"
    expect 1 "cannot write --json '$work/out.json': File too large"
    [ "$(cat "$work/out.csv")" = previous ] || fail "the previous CSV was not kept: $(head -c 200 "$work/out.csv")"
    [ "$(cat "$work/out.json")" = '["previous"]' ] || fail "the previous JSON was not kept: $(head -c 200 "$work/out.json")"
    ! ls "$work" | grep -q '\.tmp\.' || fail "temporary files were left: $(ls "$work")"
    run 2 all_reduce -b 8 -e 8 -n 1 -w 0 --csv /dev/full
    expect 1 "cannot write --csv '/dev/full': No space left on device"
    echo "ok: a write past a file-size limit or to a full device exits 1 with the reason; the previous files are kept"
    ;;
  corrupt)
    RINGDP_FAULT=corrupt:rank=1:op=9 run 3 all_reduce -b 1K -e 1K -w 2 -n 5 --algo ring
    expect 1 "# Out of bounds values : "
    grep -qF "FAILED" <<<"$out" || fail "a flipped bit was not reported: $out"
    echo "ok: a corrupted segment makes #wrong non-zero and the exit status 1"
    ;;
  errors)
    run 2 all_reduce -d quarter
    expect 2 "--datatype: quarter not in"
    run 2 all_reduce -d half -o bxor
    expect 2 "-o bxor -d half: bxor is defined for integer types and bool only"
    run 2 all_reduce -b 10X
    expect 2 "-b: '10X' has an unknown suffix 'X'"
    run 2 all_reduce -b 1M -e 1K
    expect 2 "-b 1M is larger than -e 1K"
    run 2 reduce -r 5
    expect 2 "-r 5 out of range for 2 ranks"
    run 2 allreduce
    expect 2 "unknown collective 'allreduce'"
    run 2 reduce --algo ring
    expect 1 "reduce has no ring algorithm"
    # The rows are written after the whole sweep: a missing folder is named before it starts.
    for flag in --csv --json; do
      run 2 all_reduce -b 8 -e 8 "$flag" "$work/no/out"
      expect 2 "$flag: '$work/no/out': the folder '$work/no' does not exist"
      ! grep -q "Out of bounds" <<<"$out" || fail "$flag into a missing folder: the sweep ran first: $out"
    done
    run 2 all_reduce -d int32 -o avg
    expect 2 "-o avg -d int32: avg is defined for floating-point types only"
    RINGDP_FAULT=count:rank=1:op=3:delta=2 run 2 all_reduce -b 1K -e 1K
    expect 1 "delta must be negative"
    out=$("$bench" --help) || fail "--help failed"
    for flag in -b -e -f -i -n -w -c -o -d -r -a -z --algo --backend --device --buffers --csv --json; do
      grep -qF -- "$flag" <<<"$out" || fail "--help does not list $flag"
    done
    echo "ok: bad flags exit 2 naming the flag and value; --help lists every flag"
    ;;
  paths)
    # #48: --csv and --json naming one file (it kept only the JSON), and empty paths (they wrote
    # nothing, exit 0), are refused before the sweep; sizes past 1024G, inf among them, are named
    # with their flag (1e30 came out as "negative extent", a huge -e as "-b is larger than -e").
    run 2 all_reduce -b 8 -e 8 --csv "$work/out" --json "$work/./out"
    expect 2 "--csv '$work/out' is the same file as --json '$work/./out': it would be overwritten by this run's other output"
    ! grep -q "Out of bounds" <<<"$out" || fail "--csv and --json on one file: the sweep ran first: $out"
    for flag in --csv --json; do
      run 2 all_reduce -b 8 -e 8 "$flag" ""
      expect 2 "$flag: an empty path; name a file"
    done
    for size in 1e30 inf; do
      run 2 all_reduce -b "$size"
      expect 2 "-b: '$size' is out of range: a size is 0 to 1024G (1099511627776 bytes)"
    done
    run 2 all_reduce -e 17179869184G
    expect 2 "-e: '17179869184G' is out of range"
    run 2 all_reduce -f 1 -i 1e30
    expect 2 "-i: '1e30' is out of range"
    # A folder named as an output failed only once the sweep had run (issue #48 item 10).
    run 2 all_reduce -b 8 -e 8 --csv "$work"
    expect 2 "--csv: '$work': it is a folder; name a file in it"
    ! grep -q "Out of bounds" <<<"$out" || fail "--csv naming a folder: the sweep ran first: $out"
    echo "ok: one file for two outputs, empty paths, a folder and sizes out of range exit 2 naming the flag"
    ;;
  shared-buffers)
    # --buffers shared: every row's tensors are views of allocate_shared's buffers (the direct
    # all-reduce for all_reduce), every collective and dtype still checks clean in and out of place.
    run 3 all -b 8 -e 1M -f 64 -d all --buffers shared -n 2 -w 1 --csv "$work/out.csv"
    expect 0 "# Out of bounds values : 0 OK"
    # The direct path's own trace line: the buffers were recognised on every rank.
    RINGDP_TRACE=1 run 2 all_reduce -b 1K -e 1K -n 1 -w 0 --buffers shared
    expect 0 "out of every rank's buffer into every rank's buffer"
    run 2 all_reduce --buffers shared --device cuda
    [ "$rc" -ne 0 ] || fail "--buffers shared --device cuda ran: $out"
    run 2 all_reduce --buffers other
    expect 2 "--buffers"
    echo "ok: every collective and dtype on shared buffers checks clean; cuda and unknown kinds are refused"
    ;;
  ran)
    # The CSV's ran column: what auto resolved to on each row, as the communicator reported it,
    # not what was asked. RINGDP_SHM_MAX_BYTES=1024 on 4 ranks: shared memory at 8 B, recursive
    # doubling at 8 KiB (<= 32 KiB), the ring at 8 MiB (> Rabenseifner's 2 MiB).
    RINGDP_SHM_MAX_BYTES=1024 run 4 all_reduce -b 8 -e 8M -f 1024 -n 1 -w 1 --csv "$work/auto.csv"
    expect 0 "# Out of bounds values : 0 OK"
    got=$(cut -d, -f2,3,10 "$work/auto.csv" | tr '\n' ' ')
    [ "$got" = "algorithm,ran,bytes auto,shared_memory,8 auto,recursive_doubling,8192 auto,ring,8388608 " ] ||
      fail "auto's rows do not say what ran: $got"
    # On --buffers shared auto runs the direct all-reduce at every size, past RINGDP_SHM_MAX_BYTES
    # too (a choice that depends on where the tensors lie, which a resolution by size alone
    # would miss); -w 0 with -c 1 still observes it, on the checked call.
    RINGDP_SHM_MAX_BYTES=1024 run 4 all_reduce -b 8 -e 8M -f 1024 -n 1 -w 0 -c 1 --buffers shared --csv "$work/shared.csv"
    expect 0 "# Out of bounds values : 0 OK"
    got=$(tail -n +2 "$work/shared.csv" | cut -d, -f3 | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
    [ "$got" = " 3 shared_memory " ] || fail "--buffers shared rows do not all say shared_memory: $got"
    # No untimed call (-w 0 -c 0): nothing was observed, and the column says so by being empty.
    run 2 all_reduce -b 8 -e 8 -n 1 -w 0 -c 0 --csv "$work/none.csv"
    expect 0 "all_reduce"
    [ "$(sed -n 2p "$work/none.csv" | cut -d, -f2,3)" = "auto," ] || fail "-w 0 -c 0 still names a ran algorithm: $(cat "$work/none.csv")"
    echo "ok: the ran column names what auto resolved to, shared buffers included; empty when unobserved"
    ;;
  one-size)
    # A line through one point fits it exactly whatever its slope: from one size the summary says
    # no fit is possible and what it needs (it printed "bw 0.000 fit 1.000", as if measured).
    run 2 all_reduce -b 1K -e 1K -n 2 -w 1 --algo ring
    expect 0 "# Out of bounds values : 0 OK"
    line=$(grep '^# all_reduce ring float sum' <<<"$out") || fail "no summary row for the ring: $out"
    grep -qF "no fit" <<<"$line" || fail "one size, yet a fit is printed: $line"
    grep -qF "two or more sizes" <<<"$line" || fail "the row does not say what a fit needs: $line"
    run 2 all_reduce -b 1K -e 4K -f 2 -n 2 -w 1 --algo ring
    expect 0 "# Out of bounds values : 0 OK"
    line=$(grep '^# all_reduce ring float sum' <<<"$out") || fail "no summary row for the ring: $out"
    ! grep -qF "no fit" <<<"$line" || fail "three sizes, yet no fit: $line"
    echo "ok: one size says that a fit needs two or more; three sizes are fitted"
    ;;
  help-env)
    # docs/settings.md's table is the settings table itself: a variable added, renamed or
    # redocumented in core/settings.cpp without the page fails here.
    docs="$(dirname "$0")/../../docs/settings.md"
    diff <(sed -n '/<!-- settings table: begin -->/,/<!-- settings table: end -->/p' "$docs" | sed '1d;$d') \
      <("$bench" --help-env-markdown) || fail "docs/settings.md's table differs from ringdp-bench --help-env-markdown"
    out=$("$bench" --help-env) || fail "--help-env failed"
    grep -qF "RINGDP_SHM_SLOT_BYTES=a positive multiple of 64 (default 262144)" <<<"$out" || fail "--help-env: $out"
    out=$("$build/apps/train/ringdp-train" --help-env) || fail "ringdp-train --help-env failed"
    grep -qF "RINGDP_TIMEOUT=a number of seconds from 1 to 100000000 (default 300)" <<<"$out" || fail "train --help-env: $out"
    RINGDP_TIMEOUT=5s run 2 all_reduce -b 8 -e 8 -n 1 -w 0
    expect 1 "RINGDP_TIMEOUT='5s': expected a number of seconds from 1 to 100000000"
    RINGDP_TIMEOUTT=5 run 2 all_reduce -b 8 -e 8 -n 1 -w 0
    expect 0 "ringdp: warning: RINGDP_TIMEOUTT is not a ringdp setting and is ignored (did you mean RINGDP_TIMEOUT?"
    [ "$(grep -c 'RINGDP_TIMEOUTT is not' <<<"$out")" -eq 1 ] || fail "the warning is not printed once (rank 0): $out"
    echo "ok: docs/settings.md matches the table; --help-env lists it; a bad value and a misspelt name are named"
    ;;
  kill)
    # A drill aimed at a rank the job does not have would rehearse nothing: refused at start-up.
    RINGDP_FAULT=kill:rank=7:op=3 run 2 all_reduce -b 8 -e 8 -n 1 -w 0
    expect 1 "RINGDP_FAULT: a fault for rank 7, but this job has 2 ranks (0..1)"
    RINGDP_FAULT=kill:rank=2:op=20 run 3 all_reduce -b 1K -e 64K -f 4
    [ $rc -ne 0 ] || fail "a killed rank left mpirun with exit 0"
    [ $seconds -le 20 ] || fail "the job took $seconds s to end after a rank died"
    echo "ok: a rank killed mid-run ends the job with exit $rc in ${seconds}s, no rank left behind"
    # MPI's own collective, blocking on host tensors, takes a shorter path (issue #20); the fault
    # plan must still reach it.
    RINGDP_FAULT=kill:rank=1:op=10 run 2 all_reduce -b 1K -e 1K --algo native
    [ $rc -ne 0 ] || fail "RINGDP_FAULT kill was not carried out on a native all_reduce: $out"
    grep -qF "ringdp: rank 1: RINGDP_FAULT kill at all_reduce #10" <<<"$out" || fail "no kill report: $out"
    echo "ok: the fault plan reaches MPI's own all_reduce too"
    ;;
  hang)
    # Rank 1 stalls 8 s inside the run; with a 3 s timeout its peers' watchdogs report where they
    # wait and end the job.
    RINGDP_TIMEOUT=3 RINGDP_FAULT=delay:rank=1:op=10:ms=8000 run 3 all_reduce -b 1K -e 1K --algo ring
    [ $rc -ne 0 ] || fail "a stalled rank ended with exit 0"
    grep -qE "ringdp: rank [02]: all_reduce #10 \(ring, 256 x float32, step [0-9]/4 reduce-scatter, waiting for chunk [0-9] from rank [0-9]\) exceeded 3 s" <<<"$out" ||
      fail "no step-level timeout report: $out"
    [ $seconds -le 13 ] || fail "took $seconds s (timeout 3 s + 10 s allowed)"
    echo "ok: a rank stalled past the timeout is reported by its peers' watchdogs in ${seconds}s:"
    grep "exceeded" <<<"$out" | head -2
    ;;
  envelope)
    # Without any debug mode: a rank that skips a collective, or passes another count, is caught
    # at the first exchange by the MPI envelope check (tag = kind, dtype, op, algorithm, sequence;
    # byte count).
    RINGDP_FAULT=skip:rank=2:op=5 run 3 all_reduce -b 1K -e 1K --algo ring
    [ $rc -ne 0 ] || fail "a skipped collective ended with exit 0"
    # Rank 2 (in #6) finds it, or rank 0 (in barrier #5) does first and its failure notice ends
    # rank 2's wait (issue #47 item 4); either way an envelope check names both collectives.
    grep -qF "rank 2 is in all_reduce #6 (float32, sum, ring) but rank 1 sent it a message of barrier #5 (dissemination): the ranks called different collectives" <<<"$out" ||
      grep -qE "rank [01] expected 0 bytes of barrier #5 \(dissemination\) from rank 2 and got a longer message" <<<"$out" ||
      fail "no envelope report for a skipped collective: $out"
    RINGDP_FAULT=count:rank=1:op=8:delta=-100 run 3 all_reduce -b 1K -e 1K --algo ring
    [ $rc -ne 0 ] || fail "a count mismatch ended with exit 0"
    grep -qE "expected [0-9]+ bytes of all_reduce #8 \(float32, sum, ring\) from rank [0-9] and got" <<<"$out" || fail "no count report: $out"
    # The same check on parts read from shared memory (comm/transport/shm/shared_slots.h): each part carries
    # the envelope, and a reader compares it before it reduces.
    RINGDP_FAULT=count:rank=1:op=8:delta=-100 run 3 all_reduce -b 1K -e 1K --algo shared_memory
    [ $rc -ne 0 ] || fail "a count mismatch over shared memory ended with exit 0"
    grep -qE "expected [0-9]+ bytes of all_reduce #8 \(float32, sum, shared_memory\) from rank [0-9] and got" <<<"$out" ||
      fail "no count report over shared memory: $out"
    # Far below the 300 s watchdog: reported at the exchange, not by a timeout. (10 s failed once on a
    # machine loaded 3x over by a parallel sanitizer build.)
    [ $seconds -le 30 ] || fail "took $seconds s"
    echo "ok: mismatched collectives and counts are reported at the first exchange (${seconds}s)"
    ;;
  ucx)
    # --backend ucx (comm/transport/ucx/, issue #51 item 6): every collective and algorithm with
    # its messages over UCX, as the banner and the CSV say, each result checked in and out of
    # place; shared memory off, so that every algorithm's messages go over UCX; RINGDP_TRANSPORT
    # does the same, and its values are named when it is misspelt; UCX refuses CUDA tensors.
    RINGDP_SHM_MAX_BYTES=0 run 3 all -b 8 -e 64K -f 8 --algo all -n 2 -w 1 --backend ucx --csv "$work/ucx.csv"
    expect 0 "# Out of bounds values : 0 OK"
    grep -qF "3 ranks, backend ucx, device cpu" <<<"$out" || fail "the banner does not name UCX: $out"
    wrong=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^wrong/) c[i] = 1; next }
                     { if ($4 != "ucx") bad++; for (i in c) if ($i != 0) bad++ } END { print NR - 1, bad + 0 }' "$work/ucx.csv")
    [ "${wrong#* }" = 0 ] && [ "${wrong% *}" -gt 100 ] || fail "rows, wrong or non-ucx fields: $wrong"
    RINGDP_TRANSPORT=ucx run 2 all_reduce -b 8 -e 1K -f 8 --algo all -n 2 -w 1
    expect 0 "2 ranks, backend ucx, device cpu"
    RINGDP_TRANSPORT=verbs run 2 all_reduce -b 8 -e 8 -n 1 -w 0
    expect 1 "RINGDP_TRANSPORT='verbs': expected mpi or ucx"
    run 2 all_reduce -b 8 -e 8 --backend ucx --device cuda
    expect 2 "--backend ucx carries host tensors; use --device cpu"
    echo "ok: --backend ucx, every collective and algorithm ($wrong: rows, wrong) and RINGDP_TRANSPORT=ucx; a bad RINGDP_TRANSPORT and CUDA tensors are named"
    ;;
  mismatch)
    RINGDP_DEBUG=DETAIL RINGDP_FAULT=count:rank=1:op=8:delta=-1 run 3 all_reduce -b 1K -e 1K
    [ $rc -ne 0 ] || fail "a count mismatch under RINGDP_DEBUG=DETAIL ended with exit 0"
    grep -qF "collective mismatch (RINGDP_DEBUG=DETAIL): rank 0 called all_reduce #8 (sum, 256 x float32, shared_memory), rank 1 called all_reduce #8 (sum, 255 x float32, shared_memory)" <<<"$out" ||
      fail "no mismatch report: $out"
    [ $seconds -le 10 ] || fail "took $seconds s"
    RINGDP_DEBUG=DETAIL RINGDP_FAULT=skip:rank=2:op=5 run 3 all_reduce -b 1K -e 1K
    [ $rc -ne 0 ] || fail "a skipped collective under RINGDP_DEBUG=DETAIL ended with exit 0"
    grep -qE "rank 0 called barrier #5 \([a-z_]+\), rank 2 called all_reduce #6 \(sum, 256 x float32, [a-z_]+\)|the ranks called different collectives" <<<"$out" ||
      fail "no skip report: $out"
    # Without any fault: two ranks given different sizes, calling MPI's own all_reduce (the short
    # path of a blocking native call, issue #20, must still be checked).
    RINGDP_DEBUG=DETAIL run 1 all_reduce -b 1K -e 1K --algo native : -n 1 "$bench" all_reduce -b 2K -e 2K --algo native
    [ $rc -ne 0 ] || fail "native all_reduces of different counts under RINGDP_DEBUG=DETAIL ended with exit 0"
    grep -qE "collective mismatch \(RINGDP_DEBUG=DETAIL\): rank 0 called all_reduce #[0-9]+ \(sum, 256 x float32, native\), rank 1 called all_reduce #[0-9]+ \(sum, 512 x float32, native\)" <<<"$out" ||
      fail "no mismatch report for native all_reduce: $out"
    # Ranks that chose different algorithms for the same call: the fingerprint carries the algorithm
    # (it did not, and a ring rank against a shared-memory one waited for the watchdog, issue #33).
    RINGDP_DEBUG=DETAIL run 1 all_reduce -b 1K -e 1K --algo ring : -n 1 "$bench" all_reduce -b 1K -e 1K --algo shared_memory
    [ $rc -ne 0 ] || fail "different algorithms under RINGDP_DEBUG=DETAIL ended with exit 0"
    grep -qE "collective mismatch \(RINGDP_DEBUG=DETAIL\): rank 0 called all_reduce #[0-9]+ \(sum, 256 x float32, ring\), rank 1 called all_reduce #[0-9]+ \(sum, 256 x float32, shared_memory\)" <<<"$out" ||
      fail "no mismatch report for different algorithms: $out"
    [ $seconds -le 10 ] || fail "took $seconds s"
    echo "ok: RINGDP_DEBUG=DETAIL reports a count mismatch and a skipped collective at once (${seconds}s):"
    grep -m1 -E "mismatch|different collectives" <<<"$out" || true
    ;;
  stopped)
    # A rank stopped (SIGSTOP) mid-run, as a debugger or a swapped-out node would: every report
    # must point at it. Over shared memory the stopped rank's own position said "waiting for rank 0"
    # (issue #33), a loop in the chain of waits instead of an arrow to the rank that stalled.
    for algo in shared_memory ring; do
      # Line-buffered, so that the table's header shows when the ranks are past MPI_Init and the
      # communicator's start-up, which block outside the watchdog: stopped there, no one would report.
      RINGDP_TIMEOUT=2 timeout 60 "$mpiexec" -n 3 "${launch_args[@]}" stdbuf -oL "$bench" all_reduce -b 1K -e 1K \
        -n 1000000 -w 0 --algo "$algo" >"$work/stopped.out" 2>&1 &
      job=$!
      victim=
      for _ in $(seq 100); do
        for p in $(pgrep -f "$bench all_reduce"); do
          grep -qzxE "(OMPI_COMM_WORLD_RANK|PMI_RANK)=1" "/proc/$p/environ" 2>/dev/null && victim=$p
        done
        [ -n "$victim" ] && break
        sleep 0.1
      done
      [ -n "$victim" ] || fail "$algo: found no rank 1 to stop"
      for _ in $(seq 300); do
        grep -qE "^# +size" "$work/stopped.out" && break
        sleep 0.1
      done
      grep -qE "^# +size" "$work/stopped.out" || fail "$algo: the run never reached its table: $(cat "$work/stopped.out")"
      sleep 1
      kill -STOP "$victim"
      sleep 4  # past the peers' 2 s deadline: they report and end the job
      kill -CONT "$victim" 2>/dev/null
      wait $job
      out=$(cat "$work/stopped.out")
      # The chain of "waiting for", followed from every report, must end at rank 1, never loop,
      # never end at another rank. Rank 1's own report is left out: it can come only after the
      # SIGCONT, when its watchdog wakes to 4 s gone while the launcher is still ending the job
      # (seen under load), and says nothing about who stalled.
      declare -A waits=()
      while read -r who whom; do [ "$who" = 1 ] || waits[$who]=$whom; done < <(sed -nE \
        "s/^ringdp: rank ([0-9]+): all_reduce #[0-9]+ \($algo, .*waiting for (chunk [0-9]+ from )?rank ([0-9]+)\) exceeded 2 s.*/\1 \3/p" <<<"$out")
      [ ${#waits[@]} -gt 0 ] || fail "$algo: no report of a wait: $out"
      for start in "${!waits[@]}"; do
        at=$start hops=0
        while [ -n "${waits[$at]:-}" ] && [ $hops -le 3 ]; do at=${waits[$at]} hops=$((hops + 1)); done
        [ "$at" = 1 ] || fail "$algo: the waits from rank $start lead to rank $at, not the stopped rank 1: $out"
      done
      unset waits
      echo "ok: $algo: every chain of waits leads to the stopped rank 1:"
      grep -m2 "exceeded" <<<"$out"
    done
    ;;
  thread-level)
    # A blocking run asks MPI for MPI_THREAD_SINGLE (no worker thread; Open MPI's locks off,
    # issue #20); -z 0 issues asynchronous calls and gets ringdp's default, MPI_THREAD_MULTIPLE
    # (issue #47 item 7); the variable wins.
    run 2 all_reduce -b 8 -e 64 -n 5 -w 1
    expect 0 "# MPI thread level: single (a blocking run needs no worker thread"
    run 2 all_reduce -b 8 -e 64 -n 5 -w 1 -z 0
    expect 0 "# MPI thread level: multiple"
    RINGDP_MPI_THREAD=serialized run 2 all_reduce -b 8 -e 64 -n 5 -w 1
    expect 0 "# MPI thread level: serialized"
    RINGDP_MPI_THREAD=multiple run 2 all_reduce -b 8 -e 64 -n 5 -w 1
    expect 0 "# MPI thread level: multiple"
    echo "ok: blocking runs use MPI_THREAD_SINGLE, -z 0 and RINGDP_MPI_THREAD=multiple the multiple level, RINGDP_MPI_THREAD=serialized the serialized one"
    ;;
  soak)
    # CI's reduced count; bench --soak 10000 is the full run (docs/errors.md has its figures).
    run 4 --soak 1500
    expect 0 "0 wrong elements"
    grep -qF "stable" <<<"$out" || fail "resident memory grew: $out"
    grep "soak:" <<<"$out"
    ;;
  *) fail "unknown case $case_name" ;;
esac
