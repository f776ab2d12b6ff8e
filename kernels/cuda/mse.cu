// CUDA MSE. Forward: a deterministic two-level reduction, no atomics. Level 1: a grid whose size
// depends only on n; each thread sums (p − t)² over a grid-stride range in double, then the block
// reduces its 256 sums in shared memory in a fixed tree order and writes one partial. Level 2:
// one block reduces the partials the same way and applies the mean. Same inputs, same bits.
// Backward: elementwise d = dloss · 2 (p − t) [/ n].
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/grid_stride.h"
#include "kernels/cuda/launch.h"
#include "kernels/mse.h"

namespace ringdp::kernels {
namespace {

constexpr int kBlock = 256;
constexpr int kMaxBlocks = 1024;

// Takes the array itself, not a decayed pointer, so the CPU emulator can check every access.
template <typename SharedArray>
__device__ double block_sum(double value, SharedArray& shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  return shared[0];
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    mse_partial_kernel(const T* __restrict__ pred, const T* __restrict__ target,
                       double* __restrict__ partials, long long n) {
  __shared__ double shared[kBlock];
  double acc = 0;
  grid_stride(n, [&](long long i) {
    const double diff = static_cast<double>(pred[i]) - static_cast<double>(target[i]);
    acc += diff * diff;
  });
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename T>
__global__ void __launch_bounds__(kBlock) mse_final_kernel(const double* __restrict__ partials, int count,
                                                           T* __restrict__ loss, long long n, bool mean) {
  __shared__ double shared[kBlock];
  double acc = 0;
  for (int i = threadIdx.x; i < count; i += kBlock) acc += partials[i];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) *loss = static_cast<T>(mean ? total / static_cast<double>(n) : total);
}

template <typename T>
__global__ void mse_backward_kernel(const T* __restrict__ pred, const T* __restrict__ target,
                                    const T* __restrict__ dloss, T* __restrict__ dpred, long long n,
                                    bool mean) {
  T factor = T(2) * *dloss;
  if (mean) factor /= static_cast<T>(n);
  grid_stride(n, [&](long long i) { dpred[i] = factor * (pred[i] - target[i]); });
}

}  // namespace

void mse_forward_cuda(const void* pred, const void* target, void* loss, int64_t n, DType dtype,
                      Reduction reduction, Stream stream) {
  dispatch_float(dtype, "mse_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto s = static_cast<cudaStream_t>(stream);
    const int blocks =
        static_cast<int>(std::min<int64_t>(std::max<int64_t>((n + kBlock - 1) / kBlock, 1), kMaxBlocks));
    double* partials = nullptr;
    RINGDP_CUDA_CHECK(cudaMallocAsync(&partials, blocks * sizeof(double), s));
    RINGDP_LAUNCH(blocks, kBlock, 0, s, mse_partial_kernel<T>)
    (static_cast<const T*>(pred), static_cast<const T*>(target), partials, n);
    RINGDP_CUDA_CHECK_LAUNCH(mse_partial_kernel);
    RINGDP_LAUNCH(1, kBlock, 0, s, mse_final_kernel<T>)
    (partials, blocks, static_cast<T*>(loss), n, reduction == Reduction::mean);
    RINGDP_CUDA_CHECK_LAUNCH(mse_final_kernel);
    RINGDP_CUDA_CHECK(cudaFreeAsync(partials, s));
  });
}

void mse_backward_cuda(const void* pred, const void* target, const void* dloss, void* dpred, int64_t n,
                       DType dtype, Reduction reduction, Stream stream) {
  if (n == 0) return;
  dispatch_float(dtype, "mse_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RINGDP_LAUNCH(grid_for(n, kBlock), kBlock, 0, static_cast<cudaStream_t>(stream), mse_backward_kernel<T>)
    (static_cast<const T*>(pred), static_cast<const T*>(target), static_cast<const T*>(dloss),
     static_cast<T*>(dpred), n, reduction == Reduction::mean);
    RINGDP_CUDA_CHECK_LAUNCH(mse_backward_kernel);
  });
}

}  // namespace ringdp::kernels
