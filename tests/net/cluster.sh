#!/usr/bin/env bash
# Hosts made of Linux network namespaces, on this one machine, for running ringdp's ranks over a
# real (virtual) network: each "host" is a network namespace with its own address, joined to the
# others by a veth pair through a bridge in the root namespace, its link shaped with tc; mpirun
# (in the root namespace) starts its daemons inside the hosts through a launch agent that enters
# the right namespace, and the ranks talk over TCP (shared memory only within a host).
#
#   tests/net/cluster.sh up     [--hosts H] [--rate R] [--delay D]   make them (prints the hostfile)
#   tests/net/cluster.sh status                                       what exists now
#   tests/net/cluster.sh check                                        exit 77 saying why hosts
#                                                                     for exec cannot be made here
#   tests/net/cluster.sh down                                         remove all of it
#   tests/net/cluster.sh run    [--hosts H] [--ranks-per-host P] [--rate R] [--delay D]
#                               [--timeout S] -- PROGRAM ARGS...      up, mpirun, down (always)
#   tests/net/cluster.sh exec   H -- PROGRAM ARGS...                  PROGRAM on host H (after up),
#                               as a launcher without MPI (torchrun) runs there: its own PID
#                               namespace too, so no host sees another's processes in /proc
#
# Defaults: 2 hosts, 1 rank per host, 10gbit, 25us one-way delay (added only where the kernel has
# netem; otherwise the delay is the veth's own and the run says so). Needs root and iproute2;
# where namespaces cannot be made, `run` exits 77 (skipped) with the reason. Names: namespaces
# $RINGDP_NET_PREFIX-h1.. (default rdpn), links $RINGDP_NET_PREFIX-h1-br.., bridge
# $RINGDP_NET_PREFIX-br, subnet 10.77.0.0/24 (host h is 10.77.0.(10+h)); nothing else is touched.
#
# Why the launch agent also gives each host its own UTS namespace (hostname ringdp-hN): Open MPI
# names its shared-memory segments after the hostname, in /dev/shm, which every namespace
# shares; with one hostname the hosts' segments collided and ranks crashed in the vader BTL.
# Why mpi_yield_when_idle=1: without it, ranks that busy-poll keep the CPU from the kernel's
# softirq thread that delivers veth packets until the next scheduler tick (CONFIG_HZ=250: 4 ms),
# so every small message took exactly 4 ms (8 ms at 4 KiB), whatever the shaping (see
# docs/benchmarks.md, "Across hosts").
set -euo pipefail

prefix=${RINGDP_NET_PREFIX:-rdpn}
state=${TMPDIR:-/tmp}/ringdp-net-$prefix
here=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
source "$(dirname "$here")/../../scripts/lib/mpi_env.sh"

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

hosts=2 per_host=1 rate=10gbit delay=25us limit=300
parse() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --hosts) hosts=$2; shift 2 ;;
      --ranks-per-host) per_host=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --delay) delay=$2; shift 2 ;;
      --timeout) limit=$2; shift 2 ;;
      --) shift; program=("$@"); return ;;
      *) die "unknown option '$1' (see the comment at the top of $here)" ;;
    esac
  done
}

# Why namespaces cannot be made here, or nothing.
unavailable() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; return; }
  command -v ip >/dev/null || { echo "no 'ip' (iproute2)"; return; }
  command -v tc >/dev/null || { echo "no 'tc' (iproute2)"; return; }
  command -v unshare >/dev/null || { echo "no 'unshare' (util-linux)"; return; }
  local err
  if ! err=$(ip netns add "$prefix-probe" 2>&1); then
    echo "cannot create a network namespace here (${err:-ip netns add failed}; a container without CAP_SYS_ADMIN?)"
    return
  fi
  # Entering one remounts /sys inside it, which fails where / is not a mount point (a chroot).
  if ! err=$(ip netns exec "$prefix-probe" true 2>&1); then
    ip netns del "$prefix-probe" >/dev/null 2>&1 || true
    rm -f "/run/netns/$prefix-probe" 2>/dev/null || true
    echo "cannot run a command inside a network namespace here (ip netns exec: ${err:-failed}; a chroot?)"
    return
  fi
  # What the agent adds: a hostname and IPC namespace each (`exec`'s PID namespace: exec_unavailable).
  if ! err=$(ip netns exec "$prefix-probe" unshare --uts --ipc true 2>&1); then
    ip netns del "$prefix-probe" >/dev/null 2>&1 || true
    rm -f "/run/netns/$prefix-probe" 2>/dev/null || true
    echo "cannot give a host its own hostname and IPC namespace here (unshare: ${err:-failed})"
    return
  fi
  ip netns del "$prefix-probe" >/dev/null 2>&1 || true
  # The links: a bridge and a veth pair (kernel modules a minimal kernel may lack).
  if ! err=$(ip link add "$prefix-pb" type bridge 2>&1); then
    echo "cannot create a bridge here (${err:-ip link add type bridge failed})"
    return
  fi
  ip link del "$prefix-pb" >/dev/null 2>&1 || true
  if ! err=$(ip link add "$prefix-pv" type veth peer name "$prefix-pw" 2>&1); then
    echo "cannot create a veth pair here (${err:-ip link add type veth failed})"
    return
  fi
  ip link del "$prefix-pv" >/dev/null 2>&1 || true
}

# Why `exec` cannot run here, or nothing: unavailable's reasons, and a PID namespace with its own
# /proc (a container whose /proc is masked refuses that mount).
exec_unavailable() {
  local why err
  why=$(unavailable)
  [ -z "$why" ] || { echo "$why"; return; }
  if ! err=$(unshare --pid --fork --mount-proc true 2>&1); then
    echo "cannot give a host its own PID namespace and /proc here (unshare: ${err:-failed})"
  fi
}

has_netem() {
  ip link add "$prefix-nt" type dummy 2>/dev/null || return 1
  local ok=1
  tc qdisc add dev "$prefix-nt" root netem delay 1us 2>/dev/null && ok=0
  ip link del "$prefix-nt" 2>/dev/null || true
  return $ok
}

# shape DEV [NETNS]: rate (and delay where netem exists) on DEV's egress.
shape() {
  local dev=$1 ns=${2:-}
  local run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  local err
  if [ "$netem" = yes ]; then
    err=$("${run[@]}" tc qdisc add dev "$dev" root netem delay "$delay" rate "$rate" 2>&1) && return
  else
    # Token bucket: the rate only. A burst of 256 KiB keeps full-size segments from waiting.
    err=$("${run[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst 256kb latency 50ms 2>&1) && return
  fi
  # A kernel without the shaper still gives working, unshaped links: say so once, go on.
  [ -e "$state/unshaped" ] || echo "cluster.sh: links left unshaped: tc says: $err" >&2
  touch "$state/unshaped"
}

down() {
  local n
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-h[0-9]*$" || true); do
    ip netns del "$n" 2>/dev/null || true
  done
  for n in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$prefix-" || true); do
    ip link del "$n" 2>/dev/null || true
  done
  rm -rf "$state"
}

status() {
  echo "namespaces: $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-" | tr '\n' ' ')"
  echo "links:      $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$prefix-" | tr '\n' ' ')"
}

# leftovers: prints anything of ours that still exists (nothing after `down`).
leftovers() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-" || true
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$prefix-" || true
}

up() {
  local why
  why=$(unavailable)
  [ -z "$why" ] || die "$why"
  trap 'echo "cluster.sh: making the hosts failed at line $LINENO: $BASH_COMMAND" >&2' ERR
  [ "$hosts" -ge 1 ] && [ "$hosts" -le 99 ] || die "--hosts $hosts: expected 1 to 99"
  # Interface names have at most 15 characters: PREFIX-h99-in.
  [ ${#prefix} -le 8 ] || die "RINGDP_NET_PREFIX '$prefix' is longer than 8 characters (link names would pass 15)"
  down
  mkdir -p "$state"
  netem=no
  has_netem && netem=yes
  echo "$netem" >"$state/netem"
  ip link add "$prefix-br" type bridge
  ip addr add 10.77.0.1/24 dev "$prefix-br"
  ip link set "$prefix-br" up
  : >"$state/hostfile"
  local h ns
  for h in $(seq 1 "$hosts"); do
    ns=$prefix-h$h
    ip netns add "$ns"
    ip link add "$ns-br" type veth peer name "$ns-in"
    ip link set "$ns-br" master "$prefix-br"
    ip link set "$ns-br" up
    ip link set "$ns-in" netns "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$ns-in" name eth0
    ip -n "$ns" addr add "10.77.0.$((10 + h))/24" dev eth0
    ip -n "$ns" link set eth0 up
    shape eth0 "$ns"  # out of the host
    shape "$ns-br"    # into it
    echo "10.77.0.$((10 + h)) slots=$per_host" >>"$state/hostfile"
  done
  # The agent mpirun runs instead of ssh: `agent HOST COMMAND`.
  printf '#!/bin/sh\nexec "%s" agent "$@"\n' "$here" >"$state/agent"
  chmod +x "$state/agent"
  if [ "$netem" = yes ]; then
    echo "cluster.sh: $hosts hosts, links $rate with $delay one-way (netem), hostfile $state/hostfile" >&2
  else
    echo "cluster.sh: $hosts hosts, links $rate (tbf); no netem in this kernel, so no added delay" >&2
  fi
  echo "$state/hostfile"
}

# agent HOST COMMAND: run COMMAND inside HOST's namespace (and its own hostname).
agent() {
  local host=$1
  shift
  case "$host" in
    10.77.0.*) ;;
    *) die "agent: '$host' is not one of the cluster's hosts (10.77.0.11 ...)" ;;
  esac
  local h=$((${host##*.} - 10))
  exec ip netns exec "$prefix-h$h" unshare --uts --ipc /bin/sh -c 'hostname "$1" && shift && exec /bin/sh -c "$*"' \
    agent "ringdp-h$h" "$*"
}

# exec H PROGRAM ARGS: PROGRAM inside host H's namespaces (network, hostname, IPC, PID).
exec_on() {
  local h=$1
  shift
  [ "${1:-}" = -- ] && shift
  ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$prefix-h$h" || die "exec: no host $h (run up first)"
  [ $# -gt 0 ] || die "exec: no program after --"
  exec ip netns exec "$prefix-h$h" unshare --uts --ipc --pid --fork --mount-proc /bin/sh -c \
    'hostname "$1" && shift && exec "$@"' agent "ringdp-h$h" "$@"
}

run() {
  local why
  why=$(unavailable)
  if [ -n "$why" ]; then
    echo "SKIPPED: $why"
    exit 77
  fi
  [ "${#program[@]}" -gt 0 ] || die "run: no program after --"
  trap 'down' EXIT INT TERM
  # As root, mpirun refuses to start without OMPI_ALLOW_RUN_AS_ROOT*: set here, not left to the
  # caller (the README's `cluster.sh run` line failed as root); forwarded to the ranks below.
  ringdp_mpi_env
  up >/dev/null
  local btl=tcp,self
  [ "$per_host" -gt 1 ] && btl=tcp,vader,self
  # The ranks get ringdp's settings from here (the daemons start with a bare environment).
  local forward=() v
  for v in $(compgen -e | grep -E '^(RINGDP_|UCX_|OMPI_ALLOW_RUN_AS_ROOT)' || true); do forward+=(-x "$v"); done
  local status=0
  timeout --kill-after=10 "$limit" mpirun --hostfile "$state/hostfile" -n $((hosts * per_host)) \
    --map-by slot --bind-to none \
    --mca plm_rsh_agent "$state/agent" --mca btl "$btl" \
    --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca mpi_yield_when_idle 1 "${forward[@]}" "${program[@]}" || status=$?
  return $status
}

command=${1:-}
[ $# -gt 0 ] && shift
program=()
case "$command" in
  up) parse "$@"; up ;;
  down) down ;;
  status) status ;;
  leftovers) leftovers ;;
  check) why=$(exec_unavailable); [ -z "$why" ] || { echo "SKIPPED: $why"; exit 77; } ;;
  run) parse "$@"; run ;;
  agent) agent "$@" ;;
  exec) exec_on "$@" ;;
  *) die "usage: $(basename "$0") up|status|down|run|exec [options] [-- PROGRAM ARGS...]" ;;
esac
