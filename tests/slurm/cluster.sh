#!/usr/bin/env bash
# A Slurm cluster of one node on this machine, from Debian's packages (slurmctld, slurmd,
# slurm-client): a generated slurm.conf in a folder of its own, the two daemons started directly
# (no systemd here) and stopped by the pids they wrote, nothing left behind.
#
#   tests/slurm/cluster.sh check          exit 77 (printing SKIPPED: why) where Slurm cannot start here
#   tests/slurm/cluster.sh up DIR         start a cluster whose files live in DIR; prints SLURM_CONF=...
#   tests/slurm/cluster.sh down DIR       stop it, remove DIR, fail if a daemon or step survived
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

write_conf() {
  local dir=$1 ctld_port=$2 slurmd_port=$3 node
  node=$(slurmd -C | head -n 1)  # NodeName=<host> CPUs=... RealMemory=..., as slurmd sees it
  cat >"$dir/slurm.conf" <<EOF
ClusterName=ringdp
SlurmctldHost=$(hostname)(127.0.0.1)
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
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
$node
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
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
  local dir=$1 ports state=
  [ -n "$dir" ] || die "up needs a folder"
  mkdir -p "$dir/state" "$dir/spool"
  ports=$(free_ports)
  # shellcheck disable=SC2086  # two words: the two ports
  write_conf "$dir" $ports
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  wait_for_file "$dir/slurmctld.pid" slurmctld
  slurmd -f "$SLURM_CONF"
  wait_for_file "$dir/slurmd.pid" slurmd
  for _ in $(seq 150); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  [ "$state" = idle ] || die "the node is '${state:-unknown}', not idle, after 30 s; slurmd's log: $(tail -n 5 "$dir/slurmd.log")"
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
  local dir=$1 left
  [ -d "$dir" ] || return 0
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  # A step still running when slurmd stops keeps its slurmstepd; this harness is the only Slurm
  # on the machine while its suite runs (is_parallel: false), so every slurmstepd is its own.
  pkill -KILL -x slurmstepd 2>/dev/null || true
  sleep 0.2
  rm -rf "$dir"
  left=$(live_daemons)
  [ -z "$left" ] || die "left behind after down: $left"
}

case "${1:-}" in
  check) check ;;
  up) up "${2:-}" ;;
  down) down "${2:-}" ;;
  *) die "usage: cluster.sh check | up DIR | down DIR" ;;
esac
