// One rank of a job in which a rank leaves while its peers wait for it, for tests/mpi/rank_leaves.sh
// (issue #47). Every rank runs two all-reduces of 1000 floats; before the second:
//   return   rank 1 prints an error and returns 2 from main, as a C++ program that catches its
//            error does: its communicator is destroyed on the way out, not aborted
//   extra    rank 0 runs a third all-reduce that no other rank runs; the others return 0
//   finish   nobody leaves early
//   late     nobody leaves early, but rank 1 stays 3.5 s after the last all-reduce (writing a
//            checkpoint, say): run with a 2 s collective timeout, the others wait for it at
//            teardown (with shared memory: comm/communicator.h), saying so once, and all return 0
//   mismatch rank 1's second all-reduce has 1001 floats: off shared memory one rank of a ring
//            finds it, and the others must learn it from that rank (issue #47 item 4). Each rank
//            that fails prints how long after the first all-reduce it failed, stays 4 s (a
//            PyTorch rank that catches the error lives on), and then tries one more all-reduce:
//            it fails at once saying the communicator is broken, or, where every rank refused the
//            call alike (shared memory: comm/refused_alike.h), runs on every rank
// A rank whose all-reduce fails prints "rank R: error: <message>" and returns 2 (every failing rank
// returns 2, so the job's status does not depend on which the launcher saw first). Without the
// departure notices each case but `finish` waited for the 300 s collective timeout.
//   mpirun -n N rank_leaves MODE
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "comm/communicator.h"
#include "core/error.h"
#include "tensor/tensor.h"

int main(int argc, char** argv) {
  using namespace ringdp;
  const std::string mode = argc > 1 ? argv[1] : "finish";
  auto comm = comm::Communicator::init();
  const int rank = comm->rank();
  Tensor t = full({1000}, rank);
  const auto start = std::chrono::steady_clock::now();
  try {
    comm->all_reduce(t);
    if (mode == "return" && rank == 1) {
      std::fprintf(stderr, "rank 1: error: giving up after all-reduce #0\n");
      return 2;
    }
    Tensor second = mode == "mismatch" && rank == 1 ? full({1001}, rank) : t;
    comm->all_reduce(second);
    if (mode == "extra" && rank == 0) comm->all_reduce(t);
    if (mode == "late" && rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  } catch (const Error& e) {
    const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "rank %d: error after %.1f s: %s\n", rank, after, e.what());
    if (mode == "mismatch") {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      try {
        comm->all_reduce(t);
        std::fprintf(stderr, "rank %d: then: an all-reduce ran\n", rank);
        // Refused alike, the communicator went on: a rank that leaves now has finished 3
        // collectives, and rank 0, one collective further, must hear exactly that.
        if (rank == 0) comm->all_reduce(t);
      } catch (const Error& again) {
        std::fprintf(stderr, "rank %d: then: %s\n", rank, again.what());
      }
    }
    return 2;
  }
  std::printf("rank %d: done\n", rank);
  return 0;
}
