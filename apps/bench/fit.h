// What ringdp-bench adds to nccl-tests' table: per algorithm, a least-squares fit of the
// α–β model time(bytes) = α + β·bytes, the peak bus bandwidth and the smallest size that
// reaches 80% of it.
#pragma once

#include <cstdint>
#include <vector>

namespace ringdp::bench {

struct Sample {
  int64_t bytes;
  double seconds;
  double busbw;  ///< GB/s
};

struct AlphaBeta {
  /// Whether α and β were fitted: a line needs two or more distinct sizes. From one size alpha_us,
  /// bandwidth and r_squared mean nothing (any line through the point fits it exactly).
  bool fitted = false;
  int distinct_sizes = 0;
  double alpha_us = 0;  ///< latency term
  double bandwidth = 0;  ///< 1/β in GB/s (algorithm bandwidth)
  double r_squared = 0;  ///< 1 − mean squared relative residual (1: a perfect fit)
  double peak_busbw = 0;
  int64_t bytes_at_80 = -1;  ///< smallest size with busbw ≥ 80% of peak
};

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples);

}  // namespace ringdp::bench
