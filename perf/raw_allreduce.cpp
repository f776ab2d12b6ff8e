// The baseline ringdp's per-call cost is measured against (issue #20): MPI_Allreduce called in a
// plain loop, no ringdp at all, timed as ringdp-bench times a size (barrier, warm-up, then the
// mean over iterations, the slowest rank's). Out-of-place float32 sum.
// Usage: ringdp-raw-allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP; prints "bytes,time_us".
// RINGDP_RAW_SERIALIZED=1: MPI_Init_thread at MPI_THREAD_SERIALIZED (the level ringdp asked for
// until issue #47 item 7; Open MPI locks alike at MULTIPLE), to measure what the thread level
// alone costs (docs/lab/benchmarks.md, "Where the rest goes").
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  const char* serialized = std::getenv("RINGDP_RAW_SERIALIZED");
  if (serialized && std::strcmp(serialized, "1") == 0) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  const long min = argc > 1 ? std::atol(argv[1]) : 8, max = argc > 2 ? std::atol(argv[2]) : 4096;
  const long factor = argc > 3 ? std::atol(argv[3]) : 2;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 200, warmup = argc > 5 ? std::atoi(argv[5]) : 20;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("bytes,time_us\n");
  for (long bytes = min; bytes <= max; bytes *= factor) {
    const int count = static_cast<int>(bytes / 4);
    std::vector<float> in(static_cast<size_t>(count), 1.0f), out(static_cast<size_t>(count));
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - start) / iters * 1e6, slowest = 0;
    MPI_Reduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%ld,%.3f\n", bytes, slowest);
    if (factor <= 1) break;
  }
  MPI_Finalize();
  return 0;
}
