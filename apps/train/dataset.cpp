// Implements apps/train/dataset.h (the contract is documented there). Tested by tests/cli/train.sh
// (default, seed-fixed).
#include "apps/train/dataset.h"

#include <algorithm>

#include "tensor/ops.h"

namespace ringdp::train {

Dataset synthetic_dataset(int64_t samples, int64_t features, uint64_t seed) {
  Dataset data;
  data.features = randn({samples, features}, seed * 4 + 0, 0.0, 1.0, DType::float64);
  const Tensor w_true = randn({1, features}, seed * 4 + 1, 0.0, 1.0, DType::float64);
  data.targets = ops::linear_forward(data.features, w_true, full({1}, 0.5, DType::float64));
  ops::add_(data.targets, randn({samples, 1}, seed * 4 + 2, 0.0, 0.1, DType::float64));
  return data;
}

void gather_batch(const Dataset& data, const std::vector<int64_t>& indices, DType dtype, Device device,
                  Tensor& x, Tensor& y) {
  const int64_t F = data.features.size(1), B = static_cast<int64_t>(indices.size());
  Tensor hx = empty({B, F}, DType::float64), hy = empty({B, 1}, DType::float64);
  const double* fx = data.features.data<double>();
  const double* fy = data.targets.data<double>();
  for (int64_t i = 0; i < B; ++i) {
    std::copy(fx + indices[i] * F, fx + (indices[i] + 1) * F, hx.data<double>() + i * F);
    hy.data<double>()[i] = fy[indices[i]];
  }
  x = hx.to(dtype).to(device);
  y = hy.to(dtype).to(device);
}

}  // namespace ringdp::train
