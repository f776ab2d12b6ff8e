// CUDA Adam/AdamW step, elementwise, with the CPU twin's formula and order (kernels/adam.h); the
// step's scalars come from the same host function (adam_scalars) as the CPU's.
#include <math.h>

#include "kernels/adam.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"

namespace ringdp::kernels {
namespace {

// The scalars of kernels/adam.h rounded to T.
template <typename T>
struct AdamConstants {
  T beta1, beta2, a1, a2, wd, decay, bc2_sqrt, eps, neg_step;
  bool l2, shrink;
};

template <typename T>
__global__ void adam_step_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                                 T* __restrict__ v, long long n, AdamConstants<T> c) {
  grid_stride(n, [&](long long i) {
    T param = p[i];
    if (c.shrink) param = param * c.decay;
    T d = g[i];
    if (c.l2) d = d + c.wd * param;
    const T m_i = m[i] * c.beta1 + c.a1 * d;
    const T v_i = v[i] * c.beta2 + c.a2 * d * d;
    m[i] = m_i;
    v[i] = v_i;
    const T denom = sqrt(v_i) / c.bc2_sqrt + c.eps;
    p[i] = param + c.neg_step * m_i / denom;
  });
}

}  // namespace

void adam_step_cuda(void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n, DType dtype,
                    const AdamStep& step, Stream stream) {
  const AdamScalars s = adam_scalars(step);
  if (n == 0) return;
  dispatch_float(dtype, "adam_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const AdamConstants<T> c{.beta1 = static_cast<T>(step.beta1),
                             .beta2 = static_cast<T>(step.beta2),
                             .a1 = static_cast<T>(s.one_minus_beta1),
                             .a2 = static_cast<T>(s.one_minus_beta2),
                             .wd = static_cast<T>(step.weight_decay),
                             .decay = static_cast<T>(s.decay_factor),
                             .bc2_sqrt = static_cast<T>(s.bias_correction2_sqrt),
                             .eps = static_cast<T>(step.eps),
                             .neg_step = static_cast<T>(s.neg_step_size),
                             .l2 = step.weight_decay != 0.0 && !step.decoupled,
                             .shrink = step.weight_decay != 0.0 && step.decoupled};
    RINGDP_LAUNCH(grid_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream), adam_step_kernel<T>)
    (static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(exp_avg),
     static_cast<T*>(exp_avg_sq), n, c);
    RINGDP_CUDA_CHECK_LAUNCH(adam_step_kernel);
  });
}

}  // namespace ringdp::kernels
