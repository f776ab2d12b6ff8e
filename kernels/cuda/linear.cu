// CUDA Linear forward and backward over the GEMM in gemm.cuh, plus db as a column reduction.
// Shapes: B = batch, C = in_features, OC = out_features. Tested against the CPU twin in
// tests/cuda/test_kernels_cuda.cpp.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/linear.h"

namespace ringdp::kernels {
namespace {

template <typename T, bool TRANS_A, bool TRANS_B>
void launch_gemm(const T* A, const T* B, const T* bias, T* C, int64_t M, int64_t N, int64_t K,
                 Stream stream) {
  if (M == 0 || N == 0) return;
  RINGDP_CHECK(M < (1LL << 31) && N < (1LL << 31) && K < (1LL << 31), "GEMM sizes ", M, "x", N, "x", K,
               " exceed the kernel's int indexing");
  const auto s = static_cast<cudaStream_t>(stream);
  // Row tiles on gridDim.x (up to 2^31 - 1 blocks), column tiles on gridDim.y (at most 65535):
  // the batch is the dimension that grows; rows on y stopped launching past 65535 tiles (8.4 M
  // rows of float32, 1 M of the others).
  const int64_t tile_n = std::is_same_v<T, float> ? gemm::kBN : 16;
  RINGDP_CHECK((N + tile_n - 1) / tile_n <= 65535, "GEMM with ", N, " output columns needs ",
               (N + tile_n - 1) / tile_n, " column tiles; CUDA's gridDim.y allows 65535 (at most ",
               65535 * tile_n, " columns)");
  if constexpr (std::is_same_v<T, float>) {
    const dim3 grid((M + gemm::kBM - 1) / gemm::kBM, (N + gemm::kBN - 1) / gemm::kBN);
    RINGDP_LAUNCH(grid, gemm::kThreads, 0, s, gemm::sgemm_kernel<TRANS_A, TRANS_B>)(A, B, bias, C, M, N, K);
    RINGDP_CUDA_CHECK_LAUNCH(sgemm_kernel);
  } else {
    const dim3 block(16, 16), grid((M + 15) / 16, (N + 15) / 16);
    RINGDP_LAUNCH(grid, block, 0, s, gemm::gemm_simple_kernel<T, TRANS_A, TRANS_B>)(A, B, bias, C, M, N, K);
    RINGDP_CUDA_CHECK_LAUNCH(gemm_simple_kernel);
  }
}

// db[o] = Σ_b dy[b][o]: one thread per column, rows in order, so the sum is deterministic.
template <typename T>
__global__ void column_sum_kernel(const T* __restrict__ dy, T* __restrict__ db, int rows, int cols) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= cols) return;
  T acc = 0;
  for (int b = 0; b < rows; ++b) acc += dy[static_cast<long long>(b) * cols + o];
  db[o] = acc;
}

}  // namespace

void linear_forward_cuda(const void* x, const void* W, const void* b, void* y, int64_t B, int64_t C,
                         int64_t OC, DType dtype, Stream stream) {
  dispatch_float(dtype, "linear_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // y[B,OC] = x[B,C] · W[OC,C]ᵀ + b
    launch_gemm<T, false, true>(static_cast<const T*>(x), static_cast<const T*>(W), static_cast<const T*>(b),
                                static_cast<T*>(y), B, OC, C, stream);
  });
}

void linear_backward_cuda(const void* dy, const void* x, const void* W, void* dx, void* dW, void* db,
                          int64_t B, int64_t C, int64_t OC, DType dtype, Stream stream) {
  dispatch_float(dtype, "linear_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dout = static_cast<const T*>(dy);
    if (dx)
      launch_gemm<T, false, false>(dout, static_cast<const T*>(W), nullptr, static_cast<T*>(dx), B, C, OC,
                                   stream);
    if (dW)
      launch_gemm<T, true, false>(dout, static_cast<const T*>(x), nullptr, static_cast<T*>(dW), OC, C, B,
                                  stream);
    if (db && OC > 0) {
      RINGDP_LAUNCH((OC + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream), column_sum_kernel<T>)
      (dout, static_cast<T*>(db), B, OC);
      RINGDP_CUDA_CHECK_LAUNCH(column_sum_kernel);
    }
  });
}

}  // namespace ringdp::kernels
