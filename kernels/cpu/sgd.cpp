// Implements kernels/sgd.h (the contract is documented there). Tested by tests/unit/test_kernels.cpp
// (hand-computed steps).
#include "kernels/sgd.h"

namespace ringdp::kernels {

void sgd_step_cpu(void* param, const void* grad, void* momentum_buf, int64_t n, DType dtype,
                  const SgdStep& step, Stream) {
  RINGDP_CHECK(step.momentum == 0.0 || momentum_buf != nullptr, "sgd_step: momentum ", step.momentum,
               " needs a momentum buffer");
  dispatch_float(dtype, "sgd_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* p = static_cast<T*>(param);
    const auto* g = static_cast<const T*>(grad);
    auto* buf = static_cast<T*>(momentum_buf);
    const T lr = static_cast<T>(step.lr), mu = static_cast<T>(step.momentum);
    const T wd = static_cast<T>(step.weight_decay), damp = static_cast<T>(1.0 - step.dampening);
    for (int64_t i = 0; i < n; ++i) {
      T d = g[i];
      if (step.weight_decay != 0.0) d += wd * p[i];
      if (step.momentum != 0.0) {
        buf[i] = step.first_step ? d : mu * buf[i] + damp * d;
        d = step.nesterov ? d + mu * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  });
}

}  // namespace ringdp::kernels
