// γ of the α–β–γ model (docs/scaling.md) and the memory side of the ring's bound
// (docs/lab/benchmarks.md, "The memory-bandwidth bound"): the throughput of reduce_into_cpu
// (dst op= src, float32 sum) and of memcpy, in GB/s of the buffer, for sizes from cache-resident
// to memory-bound. Usage: ringdp-reduce-gamma [MAX_MIB]; prints one row per size, the medians of
// repeated runs. Run it under mpirun -np N to measure with N processes doing the same at once,
// as the ranks of a one-host ring do (rank 0 prints; the others run silently alongside).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/reduce_into.h"

namespace {
// The launcher's rank, without initialising MPI: these processes never talk to each other.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

template <typename Op>
double median_seconds(int repeats, Op op) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[static_cast<size_t>(repeats / 2)];
}
}  // namespace

int main(int argc, char** argv) {
  const long max_mib = argc > 1 ? std::atol(argv[1]) : 64;
  const bool print = launcher_rank() == 0;
  if (print)
    std::printf(
        "# reduce_into_cpu float32 sum (dst += src) and memcpy (dst = src), GB/s of the buffer\n"
        "#%12s %12s %10s %12s %10s\n",
        "bytes", "reduce (us)", "GB/s", "memcpy (us)", "GB/s");
  for (long bytes = 4096; bytes <= max_mib * 1024 * 1024; bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<float> dst(static_cast<size_t>(n), 1.0f), src(static_cast<size_t>(n), 2.0f);
    const int repeats = static_cast<int>(std::clamp(200000000L / bytes, 5L, 2000L));
    const double reduce = median_seconds(repeats, [&] {
      ringdp::kernels::reduce_into_cpu(dst.data(), src.data(), n, ringdp::DType::float32,
                                       ringdp::ReduceOp::sum);
    });
    const double copy = median_seconds(repeats, [&] { std::memcpy(dst.data(), src.data(), bytes); });
    if (print)
      std::printf("%13ld %12.2f %10.2f %12.2f %10.2f\n", bytes, reduce * 1e6, bytes / reduce / 1e9,
                  copy * 1e6, bytes / copy / 1e9);
  }
  return 0;
}
