// One rank of a job in which a rank leaves while its peers wait for it, for tests/mpi/rank_leaves.sh
// (issue #47). Every rank runs two all-reduces of 1000 floats; before the second:
//   return   rank 1 prints an error and returns 2 from main, as a C++ program that catches its
//            error does: its communicator is destroyed on the way out, not aborted
//   extra    rank 0 runs a third all-reduce that no other rank runs; the others return 0
//   finish   nobody leaves early
// A rank whose all-reduce fails prints "rank R: error: <message>" and returns 2 (every failing rank
// returns 2, so the job's status does not depend on which the launcher saw first). Without the
// departure notices each case but `finish` waited for the 300 s collective timeout.
//   mpirun -n N rank_leaves MODE
#include <cstdio>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"
#include "tensor/tensor.h"

int main(int argc, char** argv) {
  using namespace ringdp;
  const std::string mode = argc > 1 ? argv[1] : "finish";
  auto comm = comm::Communicator::init();
  const int rank = comm->rank();
  Tensor t = full({1000}, rank);
  try {
    comm->all_reduce(t);
    if (mode == "return" && rank == 1) {
      std::fprintf(stderr, "rank 1: error: giving up after all-reduce #0\n");
      return 2;
    }
    comm->all_reduce(t);
    if (mode == "extra" && rank == 0) comm->all_reduce(t);
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    return 2;
  }
  std::printf("rank %d: done\n", rank);
  return 0;
}
