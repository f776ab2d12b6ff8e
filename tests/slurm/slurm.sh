#!/usr/bin/env bash
# The slurm suite: ringdp's programs started by srun and sbatch on a one-node Slurm cluster that
# tests/slurm/cluster.sh brings up for each case and takes down afterwards (also on failure).
#   tests/slurm/slurm.sh CASE BUILD_DIR SOURCE_DIR   (RINGDP_MPI_IMPL, RINGDP_MPIEXEC from meson)
# Cases: collectives, train, bench, sbatch, refusal, kill, requeue (one node); hosts (two Slurm nodes, each
# a network-namespace host of tests/net/cluster.sh, needing what the net suite needs).
set -uo pipefail
case_name=$1 build=$2 source=$3
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
fail() {
  echo "FAIL: $*"
  exit 1
}

"$cluster" check || exit $?
# The --mpi plugin each MPI here speaks (docs/launching.md): Open MPI 4.1 only PMIx, MPICH PMI-2.
if [ "${RINGDP_MPI_IMPL:-openmpi}" = mpich ]; then
  plugin=pmi2 wrong=pmix
else
  plugin=pmix wrong=none
fi
[ -e "/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_$plugin.so" ] ||
  { echo "SKIPPED: Slurm's mpi_$plugin plugin is missing (apt-get install slurm-wlm-basic-plugins)"; exit 77; }

nodes=1
if [ "$case_name" = hosts ]; then
  nodes=2
  command -v nsenter >/dev/null || { echo "SKIPPED: no nsenter (util-linux)"; exit 77; }
fi
work=$(mktemp -d)
trap '"$cluster" down "$work/cluster"; rm -rf "$work"' EXIT
if ! up_out=$("$cluster" up "$work/cluster" "$nodes" 2>&1); then
  # Namespaces refused (a container without CAP_SYS_ADMIN): the net suite's reason, as a skip.
  if [ "$nodes" -gt 1 ] && grep -q "no namespace hosts" <<<"$up_out"; then
    echo "SKIPPED: ${up_out#*no namespace hosts: }"
    exit 77
  fi
  fail "the cluster did not come up: $up_out"
fi
export SLURM_CONF=$work/cluster/slurm.conf
# Ranks on an oversubscribed node must yield while they wait (scripts/lib/mpi_env.sh says why).
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
train=$build/apps/train/ringdp-train bench=$build/apps/bench/ringdp-bench
collectives=$build/tests/mpi/test_mpi_collectives
# Every srun: this build's plugin, tasks past the 2 cores allowed, a limit so nothing hangs.
run_srun() {
  local n=$1
  shift
  start=$SECONDS
  out=$(cd "$work" && timeout 300 srun --mpi="$plugin" -n "$n" --overcommit "$@" 2>&1)
  rc=$? seconds=$((SECONDS - start))
  [ $rc -ne 124 ] || fail "srun -n $n $*: hung (killed after 300 s): $out"
}
launcher_args=()
[ "${RINGDP_MPI_IMPL:-openmpi}" = openmpi ] && launcher_args=(--oversubscribe --bind-to none)

case "$case_name" in
  collectives)
    # The mpi suite's collectives test, every algorithm, dtype and op, under srun instead of mpirun.
    run_srun 2 "$collectives"
    [ $rc -eq 0 ] || fail "srun -n 2 collectives: exit $rc: $(tail -n 30 <<<"$out")"
    run_srun 4 "$collectives" "[all_reduce]"
    [ $rc -eq 0 ] || fail "srun -n 4 collectives [all_reduce]: exit $rc: $(tail -n 30 <<<"$out")"
    echo "ok: the collectives test passes under srun --mpi=$plugin on 2 ranks and its all-reduce on 4"
    ;;
  train)
    # The same training under srun and under this MPI's own launcher: identical parameters.
    options=(--model mlp --hidden 16,16 --epochs 3 --momentum 0.9 --batch-size 10)
    run_srun 3 "$train" "${options[@]}" --export "$work/srun.json"
    [ $rc -eq 0 ] || fail "srun -n 3 ringdp-train: exit $rc: $out"
    (cd "$work" && timeout 300 "$RINGDP_MPIEXEC" "${launcher_args[@]}" -n 3 "$train" "${options[@]}" \
      --export "$work/mpirun.json" >/dev/null 2>&1) || fail "mpiexec -n 3 ringdp-train failed"
    cmp -s "$work/srun.json" "$work/mpirun.json" || fail "srun's parameters differ from mpiexec's"
    echo "ok: ringdp-train on 3 tasks under srun ends with mpiexec's parameters, bit for bit"
    ;;
  bench)
    run_srun 2 "$bench" --algo all -b 8 -e 64K -f 8 -n 2 -w 1
    [ $rc -eq 0 ] || fail "srun -n 2 ringdp-bench --algo all: exit $rc: $out"
    grep -qF "# Out of bounds values : 0 OK" <<<"$out" || fail "the bench's check did not pass: $out"
    grep -qF "2 ranks" <<<"$out" || fail "the bench does not see 2 ranks: $(head -n 3 <<<"$out")"
    # One host under srun too: every rank on it, so auto may use shared memory.
    grep -q "shared_memory" <<<"$out" || fail "no shared_memory algorithm on one host under srun: $out"
    echo "ok: ringdp-bench --algo all under srun: 2 ranks on one host, every check clean"
    ;;
  sbatch)
    # The example users copy, submitted as they would, and waited for.
    cd "$work" || exit 1
    out=$(timeout 300 sbatch --wait --ntasks=3 --overcommit -o "$work/job.out" \
      --export="ALL,SRUN_MPI=$plugin,TRAIN=$train,CHECKPOINT=$work/job.ckpt" \
      "$source/examples/slurm/train.sbatch" --epochs 3 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "sbatch --wait examples/slurm/train.sbatch: exit $rc: $out; job output: $(cat "$work/job.out")"
    grep -q "^epoch 3/3" "$work/job.out" || fail "the job's output has no last epoch: $(cat "$work/job.out")"
    [ -s "$work/job.ckpt" ] || fail "the job wrote no checkpoint"
    echo "ok: examples/slurm/train.sbatch ran 3 tasks to the end and wrote its checkpoint"
    ;;
  refusal)
    # The plugin this MPI cannot speak: refused by every task, naming the one it needs, never run
    # as N one-rank trainings.
    start=$SECONDS
    out=$(cd "$work" && timeout 120 srun --mpi="$wrong" -n 2 --overcommit "$train" --epochs 1 2>&1)
    rc=$?
    [ $rc -ne 124 ] || fail "srun --mpi=$wrong: hung"
    [ $rc -ne 0 ] || fail "srun --mpi=$wrong: exit 0: $out"
    grep -qF "srun --mpi=$plugin" <<<"$out" || fail "the refusal does not name --mpi=$plugin: $out"
    if grep -q "^epoch" <<<"$out"; then fail "a task trained alone before the refusal: $out"; fi
    if [ "$plugin" = pmix ]; then
      # Open MPI under srun --mpi=pmi2 dies inside MPI_Init with a page about building PMI support;
      # ringdp refuses before it, naming the plugin.
      out=$(cd "$work" && timeout 120 srun --mpi=pmi2 -n 2 --overcommit "$train" --epochs 1 2>&1)
      rc=$?
      [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "srun --mpi=pmi2: exit $rc: $out"
      grep -qF "started by srun with --mpi=pmi2" <<<"$out" && grep -qF "srun --mpi=pmix" <<<"$out" ||
        fail "srun --mpi=pmi2 is not refused by ringdp naming --mpi=pmix: $out"
    fi
    # A step of one task is no launch: the program runs alone, as outside Slurm.
    out=$(cd "$work" && timeout 120 srun --mpi="$wrong" -n 1 "$train" --epochs 1 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "srun --mpi=$wrong -n 1: a single task was refused (exit $rc): $out"
    echo "ok: srun --mpi=$wrong is refused (exit $rc), naming srun --mpi=$plugin; a one-task step runs"
    ;;
  kill)
    # A task killed mid-training: with --kill-on-bad-exit (the example's) srun ends the step at
    # once. Without it, Slurm's PMIx plugin cancels the step itself (Open MPI); where nothing
    # does, the survivors' watchdog ends them, naming the stall (RINGDP_TIMEOUT=3).
    run_srun 3 --kill-on-bad-exit=1 env RINGDP_FAULT=kill:rank=1:op=12 "$train" --epochs 50
    [ $rc -ne 0 ] || fail "a killed task left the step's exit status 0"
    [ $seconds -le 60 ] || fail "the step took $seconds s to end after a task died"
    grep -qiE "task 1.*(killed|signal)|killed.*task 1" <<<"$out" || fail "srun does not say task 1 was killed: $out"
    killed_after=$seconds
    run_srun 3 env RINGDP_TIMEOUT=3 RINGDP_FAULT=kill:rank=1:op=12 "$train" --epochs 50
    [ $rc -ne 0 ] || fail "without --kill-on-bad-exit a killed task left exit status 0"
    [ $seconds -le 120 ] || fail "without --kill-on-bad-exit the step took $seconds s to end"
    grep -qE "task 1: Killed|exceeded 3 s" <<<"$out" || fail "neither srun nor the watchdog says what ended the step: $out"
    # A batch job with a killed task is reported failed by sbatch --wait.
    out=$(cd "$work" && timeout 300 sbatch --wait --ntasks=2 --overcommit -o "$work/job.out" \
      --export="ALL,SRUN_MPI=$plugin,TRAIN=$train,CHECKPOINT=$work/job.ckpt,RINGDP_FAULT=kill:rank=1:op=12" \
      "$source/examples/slurm/train.sbatch" --epochs 50 2>&1)
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "sbatch --wait of a job with a killed task: exit $rc: $out"
    echo "ok: a killed task ends the step (srun -K: ${killed_after}s), without -K in ${seconds}s, and sbatch reports the job failed (exit $rc)"
    ;;
  requeue)
    # A batch job that loses a task mid-training, then is requeued (scontrol requeue, as an
    # administrator or a node failure would): the example's --resume auto continues from its
    # checkpoint, and the parameters equal an uninterrupted run's bit for bit.
    options=(--model mlp --hidden 16,16 --batch-size 25 --momentum 0.9 --bucket-mb 0.001 --epochs 6)
    run_srun 3 "$train" "${options[@]}" --export "$work/straight.json"
    [ $rc -eq 0 ] || fail "the uninterrupted run failed: $out"
    # The first run only is killed: a requeued job has SLURM_RESTART_COUNT.
    cat >"$work/job.sh" <<EOF
#!/bin/bash
[ -n "\${SLURM_RESTART_COUNT:-}" ] || export RINGDP_FAULT=kill:rank=1:op=40
exec bash "$source/examples/slurm/train.sbatch" ${options[*]} --export "$work/resumed.json"
EOF
    cd "$work" || exit 1
    job=$(timeout 200 sbatch --parsable --wait --requeue --ntasks=3 --overcommit --open-mode=append -o "$work/job.out" \
      --export="ALL,SRUN_MPI=$plugin,TRAIN=$train,CHECKPOINT=$work/job.ckpt" "$work/job.sh")
    rc=$?
    [ $rc -ne 0 ] && [ -n "$job" ] || fail "the first run of the job did not fail (exit $rc): $(cat "$work/job.out")"
    grep -q "RINGDP_FAULT kill" "$work/job.out" && grep -q '^epoch 1/6' "$work/job.out" && ! grep -q '^epoch 6/6' "$work/job.out" ||
      fail "the kill did not land between the first and the last epoch: $(cat "$work/job.out")"
    # Requeue makes the job eligible only 2 minutes later; StartTime=now lets it run at once.
    scontrol requeue "$job" && scontrol update jobid="$job" StartTime=now || fail "scontrol requeue $job failed"
    state=
    for _ in $(seq 400); do
      state=$(scontrol show job "$job" -o | grep -o 'JobState=[A-Z_]*')
      [ "$state" = JobState=COMPLETED ] || [ "$state" = JobState=FAILED ] && break
      sleep 0.5
    done
    [ "$state" = JobState=COMPLETED ] || fail "the requeued job ended $state: $(cat "$work/job.out")"
    grep -q "resuming from checkpoint" "$work/job.out" || fail "the requeued job did not resume: $(cat "$work/job.out")"
    cmp -s "$work/straight.json" "$work/resumed.json" || fail "the resumed job's parameters differ from the uninterrupted run's"
    echo "ok: a batch job killed mid-training and requeued resumes from its checkpoint and ends bit-identical to an uninterrupted run"
    ;;
  hosts)
    # Two Slurm nodes, two tasks on each, over TCP between the namespace hosts: every rank finds
    # its host (local rank, host size), auto picks the hierarchical all-reduce, and the
    # all-reduce matrix (every algorithm, dtype, op and count) is right.
    run_srun 4 -N 2 env RINGDP_TEST_RANKS_PER_HOST=2 "$collectives" "[.hosts]"
    [ $rc -eq 0 ] || fail "srun -N 2 -n 4 [.hosts]: exit $rc: $(tail -n 30 <<<"$out")"
    run_srun 4 -N 2 "$collectives" "[all_reduce]"
    [ $rc -eq 0 ] || fail "srun -N 2 -n 4 collectives [all_reduce]: exit $rc: $(tail -n 30 <<<"$out")"
    run_srun 4 -N 2 "$bench" -b 8 -e 1M -f 32 -n 2 -w 1
    [ $rc -eq 0 ] || fail "srun -N 2 -n 4 ringdp-bench: exit $rc: $out"
    grep -qF "# Out of bounds values : 0 OK" <<<"$out" || fail "the bench's check did not pass: $out"
    echo "ok: 2 Slurm nodes x 2 tasks: hosts found, hierarchical by default, every all-reduce right"
    ;;
  *) fail "unknown case $case_name" ;;
esac
