// Implements kernels/adam.h (the contract is documented there): the plain-loop reference the CUDA
// kernel is checked against. Tested by tests/unit/test_kernels.cpp (hand-computed steps) and
// tests/cuda/test_kernels_cuda.cpp (the CUDA twin, also under the emulator).
#include <cmath>

#include "kernels/adam.h"

namespace ringdp::kernels {

AdamScalars adam_scalars(const AdamStep& step) {
  RINGDP_CHECK(step.step >= 1, "adam_step: step number ", step.step, " must be at least 1");
  const double t = static_cast<double>(step.step);
  const double bias_correction1 = 1.0 - std::pow(step.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(step.beta2, t);
  return {.one_minus_beta1 = 1.0 - step.beta1,
          .one_minus_beta2 = 1.0 - step.beta2,
          .bias_correction2_sqrt = std::sqrt(bias_correction2),
          .neg_step_size = -(step.lr / bias_correction1),
          .decay_factor = 1.0 - step.lr * step.weight_decay};
}

void adam_step_cpu(void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n, DType dtype,
                   const AdamStep& step, Stream) {
  const AdamScalars s = adam_scalars(step);
  dispatch_float(dtype, "adam_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* p = static_cast<T*>(param);
    const auto* g = static_cast<const T*>(grad);
    auto* m = static_cast<T*>(exp_avg);
    auto* v = static_cast<T*>(exp_avg_sq);
    const T beta1 = static_cast<T>(step.beta1), beta2 = static_cast<T>(step.beta2);
    const T a1 = static_cast<T>(s.one_minus_beta1), a2 = static_cast<T>(s.one_minus_beta2);
    const T wd = static_cast<T>(step.weight_decay), decay = static_cast<T>(s.decay_factor);
    const T bc2_sqrt = static_cast<T>(s.bias_correction2_sqrt), eps = static_cast<T>(step.eps);
    const T neg_step = static_cast<T>(s.neg_step_size);
    const bool l2 = step.weight_decay != 0.0 && !step.decoupled;
    const bool shrink = step.weight_decay != 0.0 && step.decoupled;
    for (int64_t i = 0; i < n; ++i) {
      if (shrink) p[i] = p[i] * decay;
      T d = g[i];
      if (l2) d = d + wd * p[i];
      m[i] = m[i] * beta1 + a1 * d;
      v[i] = v[i] * beta2 + a2 * d * d;
      const T denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      p[i] = p[i] + neg_step * m[i] / denom;
    }
  });
}

}  // namespace ringdp::kernels
