#!/usr/bin/env bash
# A Slurm cluster of one node on this machine, from Debian's packages (slurmctld, slurmd,
# slurm-client): a generated slurm.conf in a folder of its own, the two daemons started directly
# (no systemd here) and stopped by the pids they wrote, nothing left behind.
#
#   tests/slurm/cluster.sh check          exit 77 (printing SKIPPED: why) where Slurm cannot start here
#   tests/slurm/cluster.sh up DIR [NODES] start a cluster whose files live in DIR; prints SLURM_CONF=...
#   tests/slurm/cluster.sh down DIR       stop it, remove DIR, fail if a daemon or step survived
#
# NODES > 1: one slurmd per host of tests/net/cluster.sh (network namespaces $RINGDP_NET_PREFIX-hK,
# default rdps, each with its own hostname ringdp-hK and address 10.77.0.(10+K)), slurmctld in the
# root namespace on the bridge's 10.77.0.1. Each slurmd enters only its host's network namespace
# (nsenter), not `ip netns exec`, which remounts /sys without /sys/fs/cgroup and slurmd then fails
# to start ("Unable to initialize cgroup plugin"); and each reads a slurm.conf of its own that
# differs in TmpFS, since Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<step> on every node
# and two nodes on one filesystem collided ("File exists"). NO_CONF_HASH quiets the warning about
# those differing files.
#
# Why these settings (each found by running Slurm 22.05 here): auth/none and cred/none, so no munge
# daemon is needed; proctrack/linuxproc and task/none, since /sys/fs/cgroup is not a cgroup
# hierarchy on these machines; OverSubscribe=YES and jobs that ask --overcommit, to run more tasks
# than the node has cores; ports chosen free at start-up, so a cluster never meets another
# Slurm's; ReturnToService=2 so the node comes up idle without an administrator.
set -euo pipefail

die() {
  echo "slurm cluster: $*" >&2
  exit 1
}

check() {
  local missing=()
  for tool in slurmctld slurmd srun sbatch sinfo scontrol; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "SKIPPED: Slurm is not installed (missing ${missing[*]}: apt-get install slurmctld slurmd slurm-client)"
    exit 77
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: the Slurm harness runs its daemons as root (SlurmUser=root); run as root"
    exit 77
  fi
  # down stops every slurmstepd and checks that no Slurm daemon is left: only where none ran before.
  local running
  running=$(live_daemons)
  if [ -n "$running" ]; then
    echo "SKIPPED: another Slurm already runs on this machine (the harness would not know its processes from its own): $running"
    exit 77
  fi
}

free_ports() {
  /usr/bin/python3 - <<'EOF'
import socket
held = [socket.socket() for _ in range(2)]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

# The node lines: this machine as slurmd -C describes it, or one such line per namespace host.
node_lines() {
  local nodes=$1 line k
  line=$(slurmd -C | head -n 1)  # NodeName=<host> CPUs=... RealMemory=...
  if [ "$nodes" -eq 1 ]; then
    echo "$line"
    return
  fi
  for k in $(seq 1 "$nodes"); do
    echo "NodeName=ringdp-h$k NodeAddr=10.77.0.$((10 + k)) ${line#NodeName=* }"
  done
}

write_conf() {
  local dir=$1 nodes=$2 ctld_port=$3 slurmd_port=$4 ctld_addr=127.0.0.1
  [ "$nodes" -eq 1 ] || ctld_addr=10.77.0.1
  cat >"$dir/slurm.conf" <<EOF
ClusterName=ringdp
SlurmctldHost=$(hostname)($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
$(node_lines "$nodes")
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

net_cluster() { RINGDP_NET_PREFIX=${RINGDP_NET_PREFIX:-rdps} "$(dirname "$0")/../net/cluster.sh" "$@"; }

# One slurmd per namespace host, each in its network and UTS namespaces, with its own TmpFS.
start_node_daemons() {
  local dir=$1 nodes=$2 k ns
  for k in $(seq 1 "$nodes"); do
    ns=${RINGDP_NET_PREFIX:-rdps}-h$k
    ip -n "$ns" route add default via 10.77.0.1  # srun and slurmctld listen on the root's addresses
    mkdir -p "$dir/tmp-h$k"
    sed "s|^MailProg=.*|&\nTmpFS=$dir/tmp-h$k\nDebugFlags=NO_CONF_HASH|" "$dir/slurm.conf" >"$dir/slurm-h$k.conf"
    nsenter --net="/run/netns/$ns" unshare --uts sh -c "hostname ringdp-h$k && exec slurmd -N ringdp-h$k -f '$dir/slurm-h$k.conf'"
    wait_for_file "$dir/slurmd-ringdp-h$k.pid" "slurmd of ringdp-h$k"
  done
}

# Daemonised (no -D), so $! is not theirs: each writes its pid file once it is up.
wait_for_file() {
  local file=$1 what=$2
  for _ in $(seq 100); do
    [ -s "$file" ] && return 0
    sleep 0.1
  done
  die "$what did not start (no $file); its log: $(tail -n 5 "${file%.pid}.log" 2>/dev/null)"
}

up() {
  local dir=$1 nodes=${2:-1} ports state=
  [ -n "$dir" ] || die "up needs a folder"
  mkdir -p "$dir/state"
  echo "$nodes" >"$dir/nodes"
  if [ "$nodes" -gt 1 ]; then
    if ! net_cluster up --hosts "$nodes" >/dev/null 2>"$dir/net.log"; then
      # What tests/net/cluster.sh says when this machine cannot make hosts: the caller skips on it;
      # any other failure of it is a failure.
      if grep -qE "needs root|no '(ip|tc|unshare)'|cannot (create|run)" "$dir/net.log"; then
        die "no namespace hosts: $(cat "$dir/net.log")"
      fi
      die "making the namespace hosts failed: $(cat "$dir/net.log")"
    fi
  fi
  ports=$(free_ports)
  # shellcheck disable=SC2086  # two words: the two ports
  write_conf "$dir" "$nodes" $ports
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  wait_for_file "$dir/slurmctld.pid" slurmctld
  if [ "$nodes" -eq 1 ]; then
    slurmd -f "$SLURM_CONF"
    wait_for_file "$dir/slurmd-$(hostname).pid" slurmd
  else
    start_node_daemons "$dir" "$nodes"
  fi
  for _ in $(seq 150); do
    state=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$state" = "idle " ] && break
    sleep 0.2
  done
  [ "$state" = "idle " ] || die "the nodes are '${state:-unknown}', not idle, after 30 s; slurmd's log: $(tail -n 5 "$dir"/slurmd-*.log)"
  echo "SLURM_CONF=$SLURM_CONF"
}

stop_pid_file() {
  local file=$1 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# Slurm processes still running; zombies are dead already (daemonised ones are reparented to an
# init that may not reap them on these machines).
live_daemons() {
  ps -eo pid=,stat=,comm= | awk '$2 !~ /^Z/ && ($3 == "slurmctld" || $3 == "slurmd" || $3 == "slurmstepd")'
}

down() {
  local dir=$1 left jobs
  [ -d "$dir" ] || return 0
  # Jobs first, so that their tasks end under slurmstepd's hand, not as orphans of a killed daemon.
  if [ -s "$dir/slurmctld.pid" ]; then
    export SLURM_CONF=$dir/slurm.conf
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086  # one job id a word
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  for pid_file in "$dir"/slurmd-*.pid; do stop_pid_file "$pid_file"; done
  stop_pid_file "$dir/slurmctld.pid"
  # A step still running when slurmd stops keeps its slurmstepd; this harness is the only Slurm
  # on the machine while its suite runs (is_parallel: false), so every slurmstepd is its own.
  pkill -KILL -x slurmstepd 2>/dev/null || true
  sleep 0.2
  if [ "$(cat "$dir/nodes" 2>/dev/null || echo 1)" -gt 1 ]; then
    net_cluster down
    left=$(net_cluster status | grep -v ': *$' || true)
    [ -z "$left" ] || die "namespace hosts left behind: $left"
  fi
  rm -rf "$dir"
  left=$(live_daemons)
  [ -z "$left" ] || die "left behind after down: $left"
}

case "${1:-}" in
  check) check ;;
  up) up "${2:-}" "${3:-1}" ;;
  down) down "${2:-}" ;;
  *) die "usage: cluster.sh check | up DIR [NODES] | down DIR" ;;
esac
