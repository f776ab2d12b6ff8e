// Implements apps/bench/fit.h (the contract is documented there). Tested by the bench summary in
// tests/cli/bench.sh table and one-size.
#include "apps/bench/fit.h"

#include <algorithm>
#include <set>

namespace ringdp::bench {

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples) {
  AlphaBeta fit;
  if (samples.empty()) return fit;
  // Weighted least squares with weights 1/t², i.e. minimising relative residuals: a plain fit
  // is decided by the largest sizes alone and returns a meaningless (often negative) latency.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& s : samples) {
    const double x = static_cast<double>(s.bytes), y = s.seconds;
    const double w = y > 0 ? 1.0 / (y * y) : 0.0;
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    fit.peak_busbw = std::max(fit.peak_busbw, s.busbw);
  }
  std::set<int64_t> sizes;
  for (const Sample& s : samples)
    if (s.seconds > 0) sizes.insert(s.bytes);
  fit.distinct_sizes = static_cast<int>(sizes.size());
  for (const Sample& s : samples) {
    if (s.busbw >= 0.8 * fit.peak_busbw && fit.peak_busbw > 0) {
      fit.bytes_at_80 = s.bytes;
      break;
    }
  }
  if (fit.distinct_sizes < 2) return fit;
  fit.fitted = true;
  const double denominator = sw * sxx - sx * sx;
  const double beta = denominator > 0 ? (sw * sxy - sx * sy) / denominator : 0;
  const double alpha = sw > 0 ? (sy - beta * sx) / sw : 0;
  fit.alpha_us = alpha * 1e6;
  fit.bandwidth = beta > 0 ? 1.0 / beta / 1e9 : 0;
  // R² of the relative residuals (1 = the model explains the times exactly).
  double total = 0, residual = 0;
  for (const Sample& s : samples) {
    if (s.seconds <= 0) continue;
    const double predicted = alpha + beta * static_cast<double>(s.bytes);
    residual += (s.seconds - predicted) * (s.seconds - predicted) / (s.seconds * s.seconds);
    total += 1.0;
  }
  fit.r_squared = total > 0 ? 1.0 - residual / total : 1.0;
  return fit;
}

}  // namespace ringdp::bench
