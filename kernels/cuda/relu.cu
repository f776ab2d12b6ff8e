// CUDA ReLU forward and backward: grid-stride elementwise, as the CPU twin (subgradient 0 at 0).
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"
#include "kernels/relu.h"

namespace ringdp::kernels {
namespace {

template <typename T>
__global__ void relu_forward_kernel(const T* __restrict__ x, T* __restrict__ y, long long n) {
  grid_stride(n, [&](long long i) { y[i] = x[i] > T(0) ? x[i] : T(0); });
}

template <typename T>
__global__ void relu_backward_kernel(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx,
                                     long long n) {
  grid_stride(n, [&](long long i) { dx[i] = x[i] > T(0) ? dy[i] : T(0); });
}

}  // namespace

void relu_forward_cuda(const void* x, void* y, int64_t n, DType dtype, Stream stream) {
  if (n == 0) return;
  dispatch_float(dtype, "relu_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RINGDP_LAUNCH(grid_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream), relu_forward_kernel<T>)
    (static_cast<const T*>(x), static_cast<T*>(y), n);
    RINGDP_CUDA_CHECK_LAUNCH(relu_forward_kernel);
  });
}

void relu_backward_cuda(const void* x, const void* dy, void* dx, int64_t n, DType dtype, Stream stream) {
  if (n == 0) return;
  dispatch_float(dtype, "relu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RINGDP_LAUNCH(grid_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream), relu_backward_kernel<T>)
    (static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n);
    RINGDP_CUDA_CHECK_LAUNCH(relu_backward_kernel);
  });
}

}  // namespace ringdp::kernels
