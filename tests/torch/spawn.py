"""Runs a torch-suite script as NP ranks started by torch.multiprocessing.spawn, the seed article's own
launch: no MPI launcher, so the ringdp backend meets its peers through torch's store and UCX carries
the messages. Each rank gets RANK and WORLD_SIZE (tests/torch/common.py reads them) and runs the
script as __main__ with the script's arguments.
    python spawn.py NP SCRIPT [ARGS...]
Exits 0 when every rank did; otherwise 1, naming the rank that failed (mp.spawn then ends the rest)."""
import os
import runpy
import sys

import torch.multiprocessing as mp


def rank_main(rank, size, script, args):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(size), LOCAL_WORLD_SIZE=str(size))
    sys.argv = [script] + args
    runpy.run_path(script, run_name="__main__")


def main():
    size, script, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    try:
        mp.spawn(rank_main, args=(size, script, args), nprocs=size)
    except mp.ProcessRaisedException as e:
        sys.exit(f"spawn.py: {e}")
    except mp.ProcessExitedException as e:
        sys.exit(f"spawn.py: rank {e.error_index} exited with code {e.exit_code}")


if __name__ == "__main__":
    main()
