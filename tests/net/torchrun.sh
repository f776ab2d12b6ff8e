#!/usr/bin/env bash
# torchrun --nnodes 2 across hosts made of network namespaces (issue #51 item 3): one torchrun
# agent on each host, the rendezvous over the network to host 1's store, no MPI anywhere; the
# ranks meet through that store and UCX carries their messages over the hosts' TCP link. Each host
# has its own PID and IPC namespaces (cluster.sh exec), so no rank sees another host's processes
# or shares its memory, as on separate machines.
#   tests/net/torchrun.sh BUILD_DIR RANKS_PER_HOST ddp|collectives|kill   (the torch2 suite:
#   RINGDP_TORCH_PYTHON from torch2.sh)
# ddp:  tests/torch/test_ddp.py, PyTorch DDP on ringdp against DDP on gloo in the same job.
# collectives: tests/torch/test_collectives.py, every collective against gloo's or a reference.
# kill: tests/torch/leave.py kill, rank 1 (on host 2) SIGKILLed before the second all_reduce: the
#       ranks on host 1, which cannot see its process, learn from UCX that its connection ended,
#       and raise naming it within seconds (before, they waited out torch's 30 minutes).
# Exit 77 with the reason where namespaces cannot be made.
set -uo pipefail
build=$1 per_host=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
source "$here/../torch/python.sh"
export RINGDP_NET_PREFIX=rdpn-r
# leave.py kills rank 1: on host 2 only with one rank per host.
[ "$mode" != kill ] || [ "$per_host" = 1 ] || { echo "FAIL: kill needs RANKS_PER_HOST 1 (rank 1 on host 2), not $per_host"; exit 1; }
"$cluster" check || exit $?
work=$(mktemp -d)
trap '"$cluster" down; rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for h in 1 2; do echo "--- host $h:"; tail -n 30 "$work/h$h.log" 2>/dev/null; done
  exit 1
}
"$cluster" up --hosts 2 >/dev/null 2>"$work/up.log" || fail "cluster.sh up: $(cat "$work/up.log")"
# gloo (the reference beside ringdp) finds its address from the hostname, which no host resolves.
export PYTHONPATH="$here/../torch${PYTHONPATH:+:$PYTHONPATH}" TEST_INIT_METHOD=env:// GLOO_SOCKET_IFNAME=eth0
case "$mode" in
  ddp) program=("$here/../torch/test_ddp.py" "$work") ;;
  collectives) program=("$here/../torch/test_collectives.py" "$work") ;;
  kill) program=("$here/../torch/leave.py" "$work" kill) ;;
  *) fail "mode '$mode': expected ddp, collectives or kill" ;;
esac
began=$SECONDS
for h in 1 2; do
  # TMPDIR: torchrun's agent leaves its logs there (torchelastic_*), here inside $work.
  "$cluster" exec "$h" -- env TMPDIR="$work" timeout 200 "$python" -m torch.distributed.run --nnodes 2 --node_rank $((h - 1)) \
    --nproc_per_node "$per_host" --master_addr 10.77.0.11 --master_port 29517 "${program[@]}" \
    >"$work/h$h.log" 2>&1 &
done
codes=()
for h in 1 2; do
  wait -n
  codes+=($?)
done
took=$((SECONDS - began))
ranks=$((2 * per_host))
if [ "$mode" != kill ]; then
  [ "${codes[*]}" = "0 0" ] || fail "torchrun --nnodes 2: exits ${codes[*]} after $took s"
  what="DDP on ringdp matches DDP on gloo"
  [ "$mode" = collectives ] && what="checks against gloo or the reference passed"
  # Counted, not lines: torchrun's workers share its output, and two ranks' lines may run together.
  ok=$(cat "$work/h1.log" "$work/h2.log" | grep -o "$what" | wc -l)
  [ "$ok" -eq "$ranks" ] || fail "$ok of $ranks ranks report: $what"
  grep -h "ok: rank 0 of" "$work/h1.log" "$work/h2.log"
  echo "ok: torchrun --nnodes 2 x $per_host across 2 hosts, no MPI: $mode on ringdp as on gloo ($took s)"
else
  [[ " ${codes[*]} " != *" 124 "* ]] || fail "a rank killed on host 2: a torchrun ran into its 200 s limit"
  [ $took -le 60 ] || fail "a rank killed on host 2 ended the job after $took s"
  caught=$(grep -h "caught: .*rank 1 (on another machine) lost its connection to rank" "$work/h1.log" | sort -u)
  [ "$(grep -c . <<<"$caught")" -eq "$per_host" ] ||
    fail "not every rank on host 1 named rank 1's lost connection: ${caught:-nothing}"
  echo "$caught" | head -n 1
  echo "ok: rank 1 SIGKILLed on host 2: rank 0 on host 1 raised naming it, the job ended in $took s"
fi
