#!/usr/bin/env bash
# The net suite: ringdp's ranks on hosts made of network namespaces (tests/net/cluster.sh), so
# that bytes between hosts cross a shaped TCP link, not shared memory. One case per call:
#   net.sh CASE BUILD_DIR
# Exit 77 (skipped, with the reason) where namespaces cannot be made. Every case bounds its run
# (cluster.sh --timeout) and the harness removes everything on exit; `leftovers` checks that.
set -uo pipefail
case_name=$1
build=$2
cluster=$(cd "$(dirname "$0")" && pwd)/cluster.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RINGDP_NET_PREFIX=rdpn-t
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}
# net RANKS_SPEC... -- PROGRAM ARGS: runs through the cluster; sets rc, out, seconds.
net() {
  local t0=$SECONDS
  out=$("$cluster" run "$@" 2>&1)
  rc=$?
  seconds=$((SECONDS - t0))
  if [ $rc -eq 77 ]; then
    echo "$out"
    exit 77
  fi
}
# No namespace or link of ours may survive a case, whatever happened in it.
check_clean() {
  local left
  left=$("$cluster" leftovers)
  [ -z "$left" ] || fail "left behind: $left"
}

# on_layouts WHAT LIMIT "HOSTS PER_HOST"... -- PROGRAM ARGS: PROGRAM on each layout, all must pass.
on_layouts() {
  local what=$1 limit=$2 layouts=()
  shift 2
  while [ "$1" != -- ]; do layouts+=("$1"); shift; done
  shift
  local layout h p
  for layout in "${layouts[@]}"; do
    read -r h p <<<"$layout"
    RINGDP_TEST_RANKS_PER_HOST=$p net --hosts "$h" --ranks-per-host "$p" --timeout "$limit" -- "$@"
    check_clean
    [ $rc -eq 0 ] || fail "$what on $h hosts x $p ranks: exit $rc: $(echo "$out" | tail -20)"
    echo "ok: $what on $h hosts x $p ranks (${seconds}s)"
  done
}

case "$case_name" in
  root-env)
    # cluster.sh run as the README shows it, from a shell without OMPI_ALLOW_RUN_AS_ROOT*: as
    # root, mpirun refused to start until cluster.sh set them itself.
    out=$(env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM "$cluster" run --hosts 2 --timeout 120 -- \
      "$build/apps/bench/ringdp-bench" all_reduce -b 8 -e 8 -n 1 -w 0 2>&1)
    rc=$?
    check_clean
    [ $rc -ne 77 ] || { echo "$out"; exit 77; }
    [ $rc -eq 0 ] || fail "cluster.sh run without OMPI_ALLOW_RUN_AS_ROOT* exited $rc: $(echo "$out" | tail -5)"
    grep -qF "# Out of bounds values : 0 OK" <<<"$out" || fail "no clean bench run: $out"
    echo "ok: cluster.sh run sets what mpirun needs as root ($(id -un)) by itself"
    ;;
  collectives)
    # Every collective and algorithm, odd and zero counts, every dtype, on 2 hosts x 2 ranks
    # (hierarchical: 2 x 2) and 3 hosts x 1 rank (odd world, nothing shared).
    on_layouts "collectives" 240 "2 2" "3 1" -- "$build/tests/mpi/test_mpi_collectives"
    ;;
  hosts)
    # Local ranks and host sizes as each host sees them; auto picks hierarchical across hosts.
    on_layouts "host discovery" 60 "2 2" "4 1" -- "$build/tests/mpi/test_mpi_collectives" "[.hosts]"
    ;;
  train)
    # The seed job and an MLP on 2 hosts x 2 ranks end with the parameters of a 4-rank run on
    # one host (the same data shards, the same reductions up to float rounding).
    for model in "--model linear" "--model mlp --hidden 16,8"; do
      net --hosts 2 --ranks-per-host 2 --timeout 120 -- "$build/apps/train/ringdp-train" $model --epochs 5 \
        --export "$work/net.json"
      check_clean
      [ $rc -eq 0 ] || fail "ringdp-train $model on 2 hosts x 2: exit $rc: $(echo "$out" | tail -10)"
      OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -n 4 --oversubscribe "$build/apps/train/ringdp-train" $model \
        --epochs 5 --export "$work/local.json" >"$work/local.log" 2>&1 || fail "the 1-host run failed"
      python3 - "$work/net.json" "$work/local.json" <<'PY' || fail "ringdp-train $model: parameters differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
worst = max(abs(x - y) / max(1.0, abs(y)) for k in b for x, y in zip(a[k]["data"], b[k]["data"]))
print("largest relative difference, 2 hosts x 2 vs 1 host x 4: %.2e" % worst)
sys.exit(0 if worst < 1e-5 else 1)
PY
      echo "ok: ringdp-train $model on 2 hosts x 2 matches 1 host x 4"
    done
    ;;
  bench)
    net --hosts 2 --ranks-per-host 2 --timeout 120 -- "$build/apps/bench/ringdp-bench" all_reduce --algo all \
      -b 8 -e 1M -f 16 -n 5 -w 1
    check_clean
    [ $rc -eq 0 ] || fail "ringdp-bench --algo all on 2 hosts x 2: exit $rc: $(echo "$out" | tail -10)"
    grep -q "all_reduce hierarchical" <<<"$out" || fail "no hierarchical row: $out"
    # Shared allocations need every rank on one host: across hosts each rank says why and exits.
    net --hosts 2 --timeout 60 -- "$build/apps/bench/ringdp-bench" all_reduce --buffers shared -b 1K -e 1K -n 1 -w 0
    check_clean
    [ $rc -ne 0 ] || fail "--buffers shared across 2 hosts ran: $(echo "$out" | tail -5)"
    grep -q "needs every rank on one host; these 2 ranks run on 2 hosts" <<<"$out" ||
      fail "--buffers shared across hosts: no refusal naming the hosts: $(echo "$out" | tail -5)"
    echo "ok: ringdp-bench --algo all on 2 hosts x 2, and shared buffers refused across hosts (${seconds}s)"
    ;;
  drills)
    # A rank killed on the other host ends the job promptly; a rank stalled past the timeout is
    # reported and ends it (docs/errors.md).
    RINGDP_FAULT=kill:rank=3:op=12 net --hosts 2 --ranks-per-host 2 --timeout 90 -- \
      "$build/apps/train/ringdp-train" --epochs 10
    check_clean
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a killed rank on host 2: exit $rc after ${seconds}s"
    [ $seconds -le 30 ] || fail "a killed rank on host 2 took ${seconds}s to end the job"
    echo "ok: a rank killed on host 2 ends the job with exit $rc in ${seconds}s"
    RINGDP_TIMEOUT=3 RINGDP_FAULT=delay:rank=2:op=12:ms=8000 net --hosts 2 --ranks-per-host 2 --timeout 90 -- \
      "$build/apps/train/ringdp-train" --epochs 10
    check_clean
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a stalled rank: exit $rc after ${seconds}s"
    grep -q "exceeded 3 s" <<<"$out" || fail "no timeout report: $out"
    echo "ok: a rank stalled 8 s with a 3 s timeout ends the job with a report in ${seconds}s"
    ;;
  *) fail "unknown case $case_name" ;;
esac
