#include "apps/bench/fit.h"

#include <algorithm>

namespace ringdp::bench {

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples) {
  AlphaBeta fit;
  const double n = static_cast<double>(samples.size());
  if (samples.empty()) return fit;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& s : samples) {
    const double x = static_cast<double>(s.bytes), y = s.seconds;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    fit.peak_busbw = std::max(fit.peak_busbw, s.busbw);
  }
  const double denominator = n * sxx - sx * sx;
  const double beta = denominator > 0 ? (n * sxy - sx * sy) / denominator : 0;
  const double alpha = (sy - beta * sx) / n;
  fit.alpha_us = alpha * 1e6;
  fit.bandwidth = beta > 0 ? 1.0 / beta / 1e9 : 0;
  const double mean = sy / n;
  double total = 0, residual = 0;
  for (const Sample& s : samples) {
    const double predicted = alpha + beta * static_cast<double>(s.bytes);
    total += (s.seconds - mean) * (s.seconds - mean);
    residual += (s.seconds - predicted) * (s.seconds - predicted);
  }
  fit.r_squared = total > 0 ? 1.0 - residual / total : 1.0;
  for (const Sample& s : samples) {
    if (s.busbw >= 0.8 * fit.peak_busbw && fit.peak_busbw > 0) {
      fit.bytes_at_80 = s.bytes;
      break;
    }
  }
  return fit;
}

}  // namespace ringdp::bench
