// γ of the α–β–γ model (docs/scaling.md): the local reduction's throughput, reduce_into_cpu
// (dst op= src) on float32 sum, in GB/s of the reduced buffer, for sizes from cache-resident to
// memory-bound. Usage: ringdp-reduce-gamma [MAX_MIB]; prints one row per size, the median of
// repeated runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/reduce_into.h"

int main(int argc, char** argv) {
  const long max_mib = argc > 1 ? std::atol(argv[1]) : 64;
  std::printf("# reduce_into_cpu float32 sum: dst += src\n#%12s %12s %10s\n", "bytes", "time (us)", "GB/s");
  for (long bytes = 4096; bytes <= max_mib * 1024 * 1024; bytes *= 4) {
    const int64_t n = bytes / 4;
    std::vector<float> dst(static_cast<size_t>(n), 1.0f), src(static_cast<size_t>(n), 2.0f);
    const int repeats = static_cast<int>(std::clamp(200000000L / bytes, 5L, 2000L));
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      ringdp::kernels::reduce_into_cpu(dst.data(), src.data(), n, ringdp::DType::float32,
                                       ringdp::ReduceOp::sum);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
    const double median = times[static_cast<size_t>(repeats / 2)];
    std::printf("%13ld %12.2f %10.2f\n", bytes, median * 1e6, bytes / median / 1e9);
  }
  return 0;
}
