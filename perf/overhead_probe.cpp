// Splits ringdp's per-call cost at 2+ ranks in two (issue #20): MPI_Allreduce called directly in
// a process that ringdp initialised (its thread level, its libraries loaded), against the same
// all-reduce through Communicator::all_reduce(native). The first, compared with
// ringdp-raw-allreduce, is what the process costs; the difference between the two is the code
// path. raw-dup calls MPI_Allreduce on a duplicate of MPI_COMM_WORLD that returns errors, as
// ringdp's own communicator is. WORK adds a busy loop of that many trips before every call (200
// trips are about ringdp's own path on one rank here), to see what the same amount of plain work
// costs on 2 ranks. Out-of-place float32 sum of 2 elements; prints the slowest rank's mean. Not a test.
//   mpirun -np 2 build/perf/ringdp-overhead-probe raw|raw-dup|native [ITERATIONS [WORK]]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comm/bootstrap/mpi_runtime.h"
#include "comm/communicator.h"

using namespace ringdp;

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-overhead-probe");
  const bool raw = argc > 1 && std::strcmp(argv[1], "raw") == 0;
  const bool dup = argc > 1 && std::strcmp(argv[1], "raw-dup") == 0;
  if (argc < 2 || (!raw && !dup && std::strcmp(argv[1], "native") != 0)) {
    std::fprintf(stderr, "usage: ringdp-overhead-probe raw|raw-dup|native [iterations [work]]\n");
    return 2;
  }
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 50000;
  const int work = argc > 3 ? std::atoi(argv[3]) : 0;
  volatile int sink = 0;
  auto world = comm::Communicator::init();
  Tensor in = zeros({2}), out = zeros({2});
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &copy);
  MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  auto once = [&] {
    for (int k = 0; k < work; ++k) sink = sink + 1;
    if (raw || dup)
      MPI_Allreduce(in.data_ptr(), out.data_ptr(), 2, MPI_FLOAT, MPI_SUM, dup ? copy : MPI_COMM_WORLD);
    else
      world->all_reduce(in, out, ReduceOp::sum, {.algorithm = comm::Algorithm::native});
  };
  for (int i = 0; i < 1000; ++i) once();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) once();
  double us =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations * 1e6;
  double slowest = 0;
  MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (world->rank() == 0) std::printf("%s %.3f us\n", argv[1], slowest);
  return 0;
}
