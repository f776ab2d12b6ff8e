# plain_launch NP COMMAND...: a launcher without MPI, as a framework's own may be: NP processes
# with RANK and WORLD_SIZE set, each waited for and none ended when another fails (torchrun and
# mp.spawn end the others; a launcher that does not leaves it to ringdp). Its status: the first
# non-zero one of the ranks'. Sourced by tests/torch/jobs.sh and tests/torch/run.sh.
plain_launch() {
  local n=$1 r pids=() status=0 s
  shift
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n "$@" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do
    wait "$r"
    s=$?
    [ $status -ne 0 ] || status=$s
  done
  return $status
}
