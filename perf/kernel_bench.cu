// Kernel benchmark (not a test), for the GPU machine: our Linear-forward SGEMM against cuBLAS
// SGEMM in pure float32 (no TF32), and MSE forward and reduce_into against a device-to-device
// cudaMemcpy of the same bytes. CUDA events, warm-up, median of many runs. Prints a table.
//   build/bench/ringdp-kernel-bench [repeats]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/linear.h"
#include "kernels/mse.h"
#include "kernels/reduce_into.h"

using namespace ringdp;
using namespace ringdp::kernels;

namespace {

float median_ms(int repeats, const std::function<void()>& work) {
  cudaEvent_t start, stop;
  RINGDP_CUDA_CHECK(cudaEventCreate(&start));
  RINGDP_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) work();  // warm-up
  std::vector<float> times;
  for (int i = 0; i < repeats; ++i) {
    RINGDP_CUDA_CHECK(cudaEventRecord(start));
    work();
    RINGDP_CUDA_CHECK(cudaEventRecord(stop));
    RINGDP_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    RINGDP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  RINGDP_CUDA_CHECK(cudaEventDestroy(start));
  RINGDP_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

float* device_random(size_t n) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  float* p = nullptr;
  RINGDP_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
  RINGDP_CUDA_CHECK(cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop;
  RINGDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasCreate failed\n");
    return 1;
  }
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // pure float32: no TF32 tensor cores

  std::printf("# GEMM y[M,N] = x[M,K]·W[N,K]ᵀ, float32\n%-22s %12s %12s %8s\n", "M x N x K", "ours GF/s",
              "cuBLAS GF/s", "ratio");
  struct Shape {
    int M, N, K;
  };
  const Shape shapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                          {64, 4096, 1024},   {64, 4096, 4096},   {64, 1024, 4096},   {400, 1, 10}};
  for (const Shape& s : shapes) {
    float* x = device_random(static_cast<size_t>(s.M) * s.K);
    float* W = device_random(static_cast<size_t>(s.N) * s.K);
    float* y = nullptr;
    RINGDP_CUDA_CHECK(cudaMalloc(&y, static_cast<size_t>(s.M) * s.N * sizeof(float)));
    const double flops = 2.0 * s.M * s.N * s.K;
    const float ours =
        median_ms(repeats, [&] { linear_forward_cuda(x, W, nullptr, y, s.M, s.K, s.N, DType::float32); });
    const float one = 1.0f, zero = 0.0f;
    // Row-major y = x·Wᵀ is column-major yᵀ = W·xᵀ: cuBLAS computes (N×M) = op(W)(N×K) · op(x)(K×M).
    const float theirs = median_ms(repeats, [&] {
      cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, W, s.K, x, s.K, &zero, y, s.N);
    });
    std::printf("%5d x %5d x %5d   %12.1f %12.1f %8.2f\n", s.M, s.N, s.K, flops / ours / 1e6,
                flops / theirs / 1e6, theirs / ours);
    cudaFree(x);
    cudaFree(W);
    cudaFree(y);
  }

  std::printf(
      "# memory-bound kernels against cudaMemcpy (device to device) of the same bytes moved\n%-28s %10s %10s "
      "%8s\n",
      "kernel, elements", "GB/s", "copy GB/s", "ratio");
  for (size_t n : {size_t{1} << 20, size_t{1} << 24, size_t{1} << 28}) {
    float* a = device_random(n);
    float* b = device_random(n);
    float* loss = nullptr;
    RINGDP_CUDA_CHECK(cudaMalloc(&loss, sizeof(float)));
    // MSE reads 2n floats; reduce_into reads 2n and writes n. The copy moves the same bytes read+written.
    const float mse =
        median_ms(repeats, [&] { mse_forward_cuda(a, b, loss, n, DType::float32, Reduction::mean); });
    const float red = median_ms(repeats, [&] { reduce_into_cuda(a, b, n, DType::float32, ReduceOp::sum); });
    const float copy = median_ms(
        repeats, [&] { RINGDP_CUDA_CHECK(cudaMemcpy(a, b, n * sizeof(float), cudaMemcpyDeviceToDevice)); });
    const double copy_gbs = 2.0 * n * 4 / copy / 1e6;
    std::printf("mse_forward, %-15zu %10.1f %10.1f %8.2f\n", n, 2.0 * n * 4 / mse / 1e6, copy_gbs,
                (2.0 * n * 4 / mse / 1e6) / copy_gbs);
    std::printf("reduce_into sum, %-11zu %10.1f %10.1f %8.2f\n", n, 3.0 * n * 4 / red / 1e6, copy_gbs,
                (3.0 * n * 4 / red / 1e6) / copy_gbs);
    cudaFree(a);
    cudaFree(b);
    cudaFree(loss);
  }
  cublasDestroy(handle);
  return 0;
}
