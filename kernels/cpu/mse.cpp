// CPU MSE. The forward accumulates in float64 in index order: deterministic, and accurate
// enough that float32 results are the correctly rounded mean for the sizes we train on.
#include "kernels/mse.h"

namespace ringdp::kernels {

void mse_forward_cpu(const void* pred, const void* target, void* loss, int64_t n, DType dtype,
                     Reduction reduction, Stream) {
  dispatch_float(dtype, "mse_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* p = static_cast<const T*>(pred);
    const auto* t = static_cast<const T*>(target);
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double diff = static_cast<double>(p[i]) - static_cast<double>(t[i]);
      acc += diff * diff;
    }
    // The mean of zero elements is NaN, as in PyTorch.
    if (reduction == Reduction::mean) acc /= static_cast<double>(n);
    *static_cast<T*>(loss) = static_cast<T>(acc);
  });
}

void mse_backward_cpu(const void* pred, const void* target, const void* dloss, void* dpred, int64_t n,
                      DType dtype, Reduction reduction, Stream) {
  dispatch_float(dtype, "mse_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* p = static_cast<const T*>(pred);
    const auto* t = static_cast<const T*>(target);
    auto* d = static_cast<T*>(dpred);
    T factor = T(2) * *static_cast<const T*>(dloss);
    if (reduction == Reduction::mean) factor /= static_cast<T>(n);
    for (int64_t i = 0; i < n; ++i) d[i] = factor * (p[i] - t[i]);
  });
}

}  // namespace ringdp::kernels
