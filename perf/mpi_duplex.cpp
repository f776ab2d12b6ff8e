// Two ranks send each other BYTES at the same time, as every step of a two-rank all-reduce does,
// once as one message each way and once as PIECES messages: raw MPI, no ringdp. Across hosts this
// shows what a single large message costs on Open MPI's TCP BTL (docs/benchmarks.md, "The link's
// rate across hosts"). Ranks beyond the first two wait at the barriers.
// Usage: mpirun -np 2 ringdp-mpi-duplex [BYTES [PIECES [ITERS]]] (defaults 16 MiB, 16, 5).
// Prints, per way of sending, the mean time per exchange (after one warm-up) and MB/s each way.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
// One exchange of `bytes` each way in `pieces` messages (the last takes the remainder); seconds.
double exchange(std::vector<char>& out, std::vector<char>& in, long pieces, int peer) {
  const long bytes = static_cast<long>(out.size()), piece = (bytes + pieces - 1) / pieces;
  std::vector<MPI_Request> requests;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long at = 0; at < bytes; at += piece) {
    const int length = static_cast<int>(bytes - at < piece ? bytes - at : piece);
    requests.emplace_back();
    MPI_Irecv(in.data() + at, length, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests.back());
    requests.emplace_back();
    MPI_Isend(out.data() + at, length, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests.back());
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  return MPI_Wtime() - start;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long bytes = argc > 1 ? std::atol(argv[1]) : 16L << 20;
  const long pieces = argc > 2 ? std::atol(argv[2]) : 16;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 5;
  if (size < 2 || bytes <= 0 || bytes > (1L << 30) || pieces < 1 || pieces > bytes || iters < 1) {
    if (rank == 0)
      std::fprintf(stderr,
                   "ringdp-mpi-duplex: expected 2+ ranks (got %d), BYTES 1 to 1 GiB (got %ld), PIECES 1 to "
                   "BYTES (got %ld), ITERS 1+ (got %d)\n",
                   size, bytes, pieces, iters);
    MPI_Finalize();
    return 2;
  }
  std::vector<char> out(static_cast<size_t>(bytes), 1), in(static_cast<size_t>(bytes));
  for (long split : {1L, pieces}) {
    double total = 0;
    for (int i = 0; i <= iters; ++i) {
      if (rank >= 2) {
        MPI_Barrier(MPI_COMM_WORLD);
        continue;
      }
      const double t = exchange(out, in, split, 1 - rank);
      if (i > 0) total += t;
    }
    if (rank == 0)
      std::printf("%ld bytes each way as %ld message(s): %.1f ms, %.1f MB/s each way\n", bytes, split,
                  1e3 * total / iters, bytes / (total / iters) / 1e6);
  }
  MPI_Finalize();
  return 0;
}
