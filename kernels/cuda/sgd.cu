// CUDA SGD step, elementwise, with the CPU twin's formula (kernels/sgd.h).
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"
#include "kernels/sgd.h"

namespace ringdp::kernels {
namespace {

template <typename T>
__global__ void sgd_step_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, long long n,
                                T lr, T mu, T wd, T damp, bool use_momentum, bool use_wd, bool nesterov,
                                bool first) {
  grid_stride(n, [&](long long i) {
    T d = g[i];
    if (use_wd) d += wd * p[i];
    if (use_momentum) {
      buf[i] = first ? d : mu * buf[i] + damp * d;
      d = nesterov ? d + mu * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  });
}

}  // namespace

void sgd_step_cuda(void* param, const void* grad, void* momentum_buf, int64_t n, DType dtype,
                   const SgdStep& step, Stream stream) {
  RINGDP_CHECK(step.momentum == 0.0 || momentum_buf != nullptr, "sgd_step: momentum ", step.momentum,
               " needs a momentum buffer");
  if (n == 0) return;
  dispatch_float(dtype, "sgd_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RINGDP_LAUNCH(grid_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream), sgd_step_kernel<T>)
    (static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(momentum_buf), n,
     static_cast<T>(step.lr), static_cast<T>(step.momentum), static_cast<T>(step.weight_decay),
     static_cast<T>(1.0 - step.dampening), step.momentum != 0.0, step.weight_decay != 0.0, step.nesterov,
     step.first_step);
    RINGDP_CUDA_CHECK_LAUNCH(sgd_step_kernel);
  });
}

}  // namespace ringdp::kernels
