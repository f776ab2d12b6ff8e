// Splits ringdp's per-call cost at 2+ ranks in two (issue #20): MPI_Allreduce called directly in
// a process that ringdp initialised (its thread level, its libraries loaded), against the same
// all-reduce through Communicator::all_reduce(native). The first, compared with
// ringdp-raw-allreduce, is what the process costs; the difference between the two is the code
// path. Out-of-place float32 sum of 2 elements; prints the slowest rank's mean. Not a test.
//   mpirun -np 2 build/perf/ringdp-overhead-probe raw|native [iterations]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "comm/communicator.h"
#include "comm/mpi_runtime.h"

using namespace ringdp;

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-overhead-probe");
  const bool raw = argc > 1 && std::strcmp(argv[1], "raw") == 0;
  if (argc < 2 || (!raw && std::strcmp(argv[1], "native") != 0)) {
    std::fprintf(stderr, "usage: ringdp-overhead-probe raw|native [iterations]\n");
    return 2;
  }
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 50000;
  auto world = comm::Communicator::init();
  Tensor in = zeros({2}), out = zeros({2});
  auto once = [&] {
    if (raw)
      MPI_Allreduce(in.data_ptr(), out.data_ptr(), 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
  if (world->rank() == 0) std::printf("%s %.3f us\n", raw ? "raw-in-ringdp" : "native", slowest);
  return 0;
}
